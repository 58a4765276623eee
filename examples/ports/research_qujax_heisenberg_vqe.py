# Source: https://github.com/CQCL/qujax/blob/main/examples/heisenberg_vqe.ipynb (the notebook's cells), with the library
#   code it calls from the same repository: qujax/gates.py, qujax/statetensor.py (apply_gate, _to_gate_func,
#   _gate_func_to_unitary, get_params_to_statetensor_func), qujax/statetensor_observable.py
#   (statetensor_to_single_expectation, get_hermitian_tensor, _get_tensor_to_expectation_func,
#   get_statetensor_to_expectation_func) and qujax/utils.py (paulis, check_unitary, check_hermitian, _arrayify_inds,
#   check_circuit)
# Exercises: a statevector quantum-circuit simulator: complex gate matrices (jnp.block, 1j * Pauli matrices, Rx/Ry/Rz
#   from jnp.cos/jnp.sin), gates applied with jnp.tensordot and jnp.moveaxis on a (2,)*n state tensor, .at[].set,
#   jnp.take of parameters, jnp.kron of Pauli tensors, expectation values <psi|H|psi> by tensordot with .conjugate()
#   and .real, jnp.allclose of complex matrices; value_and_grad of a variational circuit's energy (the Heisenberg
#   Hamiltonian), gradient-descent steps (VQE)
# Adapted: the four library files merged into one script before the notebook's cells, docstrings, type hints and the
#   functions the notebook does not reach left out; gates.py keeps the gates and Pauli matrices the circuit uses;
#   `gates.__dict__[gate]` (the module qujax.gates) spelled `globals()[gate]`; the notebook's plotting dropped, the
#   cells' values printed; 3 qubits and depth 1 instead of 4 and 2, vqe runs 2 steps (one gradient step) instead of 250

import collections.abc
from inspect import signature

from jax import numpy as jnp, random, vmap, grad, value_and_grad, jit

# ---- qujax/gates.py ----

I = jnp.eye(2)

_0 = jnp.zeros((2, 2))

X = jnp.array([[0.0, 1.0], [1.0, 0.0]])

Y = jnp.array([[0.0, -1.0j], [1.0j, 0.0]])

Z = jnp.array([[1.0, 0.0], [0.0, -1.0]])

H = jnp.array([[1.0, 1.0], [1.0, -1]]) / jnp.sqrt(2)

CZ = jnp.block([[I, _0], [_0, Z]]).reshape((2,) * 4)


def Rx(param: float) -> jnp.ndarray:
    param_pi_2 = param * jnp.pi / 2
    return jnp.cos(param_pi_2) * I - jnp.sin(param_pi_2) * X * 1.0j


def Ry(param: float) -> jnp.ndarray:
    param_pi_2 = param * jnp.pi / 2
    return jnp.cos(param_pi_2) * I - jnp.sin(param_pi_2) * Y * 1.0j


def Rz(param: float) -> jnp.ndarray:
    param_pi_2 = param * jnp.pi / 2
    return jnp.cos(param_pi_2) * I - jnp.sin(param_pi_2) * Z * 1.0j

# ---- qujax/utils.py ----

paulis = {"X": X, "Y": Y, "Z": Z}


def check_unitary(gate):
    if isinstance(gate, str):
        if gate in globals():
            gate = globals()[gate]
        else:
            raise KeyError(
                f"Gate string '{gate}' not found in qujax.gates "
                f"- consider changing input to an array or callable"
            )

    if callable(gate):
        num_args = len(signature(gate).parameters)
        gate_arr = gate(*jnp.ones(num_args) * 0.1)
    elif hasattr(gate, "__array__"):
        gate_arr = gate
    else:
        raise TypeError(
            f"Unsupported gate type - gate must be either a string in qujax.gates, an array or "
            f"callable: {gate}"
        )

    gate_square_dim = int(jnp.sqrt(gate_arr.size))
    gate_arr = gate_arr.reshape(gate_square_dim, gate_square_dim)

    if jnp.any(
        jnp.abs(gate_arr @ jnp.conjugate(gate_arr).T - jnp.eye(gate_square_dim)) > 1e-3
    ):
        raise TypeError(f"Gate not unitary: {gate}")


def check_hermitian(hermitian, check_z_commutes: bool = False):
    if isinstance(hermitian, str):
        if hermitian not in paulis:
            raise TypeError(
                f"qujax only accepts {tuple(paulis.keys())} as Hermitian strings,"
                "received: {hermitian}"
            )
        n_qubits = 1
        hermitian_mat = paulis[hermitian]

    else:
        n_qubits = hermitian.ndim // 2
        hermitian_mat = hermitian.reshape(2 * n_qubits, 2 * n_qubits)
        if not jnp.allclose(hermitian_mat, hermitian_mat.T.conj()):
            raise TypeError(f"Array not Hermitian: {hermitian}")


def _arrayify_inds(param_inds_seq):
    if param_inds_seq is None:
        param_inds_seq = [None]
    param_inds_seq = [jnp.array(p) for p in param_inds_seq]
    param_inds_seq = [
        jnp.array([]) if jnp.any(jnp.isnan(p)) else p.astype(int)
        for p in param_inds_seq
    ]
    return param_inds_seq


def check_circuit(
    gate_seq,
    qubit_inds_seq,
    param_inds_seq,
    n_qubits: int = None,
    check_unitaries: bool = True,
):
    if not isinstance(gate_seq, collections.abc.Sequence):
        raise TypeError("gate_seq must be Sequence e.g. ['H', 'Rx', 'CX']")

    if (not isinstance(qubit_inds_seq, collections.abc.Sequence)) or (
        any(
            [
                not (isinstance(q, collections.abc.Sequence) or hasattr(q, "__array__"))
                for q in qubit_inds_seq
            ]
        )
    ):
        raise TypeError(
            "qubit_inds_seq must be Sequence of Sequences e.g. [[0,1], [0], []]"
        )

    if (not isinstance(param_inds_seq, collections.abc.Sequence)) or (
        any(
            [
                not (
                    isinstance(p, collections.abc.Sequence)
                    or hasattr(p, "__array__")
                    or p is None
                )
                for p in param_inds_seq
            ]
        )
    ):
        raise TypeError(
            "param_inds_seq must be Sequence of Sequences e.g. [[0,1], [0], []]"
        )

    if len(gate_seq) != len(qubit_inds_seq) or len(param_inds_seq) != len(
        param_inds_seq
    ):
        raise TypeError(
            f"gate_seq ({len(gate_seq)}), qubit_inds_seq ({len(qubit_inds_seq)})"
            f"and param_inds_seq ({len(param_inds_seq)}) must have matching lengths"
        )

    if n_qubits is not None and n_qubits < max([max(qi) for qi in qubit_inds_seq]) + 1:
        raise TypeError(
            "n_qubits must be larger than largest qubit index in qubit_inds_seq"
        )

    if check_unitaries:
        for g in gate_seq:
            check_unitary(g)

# ---- qujax/statetensor.py ----

def apply_gate(statetensor, gate_unitary, qubit_inds):
    statetensor = jnp.tensordot(gate_unitary, statetensor,
                                axes=(list(range(-len(qubit_inds), 0)), qubit_inds))
    statetensor = jnp.moveaxis(statetensor, list(range(len(qubit_inds))), qubit_inds)
    return statetensor


def _to_gate_func(gate):
    def _array_to_callable(arr):
        return lambda: arr

    if isinstance(gate, str):
        gate = globals()[gate]

    if callable(gate):
        gate_func = gate
    elif hasattr(gate, '__array__'):
        gate_func = _array_to_callable(jnp.array(gate))
    else:
        raise TypeError(f'Unsupported gate type - gate must be either a string in qujax.gates, an array or '
                        f'callable: {gate}')
    return gate_func


def _gate_func_to_unitary(gate_func, qubit_inds, param_inds, params):
    gate_params = jnp.take(params, param_inds)
    gate_unitary = gate_func(*gate_params)
    gate_unitary = gate_unitary.reshape((2,) * (2 * len(qubit_inds)))  # Ensure gate is in tensor form
    return gate_unitary


def get_params_to_statetensor_func(gate_seq, qubit_inds_seq, param_inds_seq, n_qubits: int = None):
    check_circuit(gate_seq, qubit_inds_seq, param_inds_seq, n_qubits)

    if n_qubits is None:
        n_qubits = max([max(qi) for qi in qubit_inds_seq]) + 1

    gate_seq_callable = [_to_gate_func(g) for g in gate_seq]
    param_inds_array_seq = _arrayify_inds(param_inds_seq)

    def params_to_statetensor_func(params, statetensor_in=None):
        if statetensor_in is None:
            statetensor = jnp.zeros((2,) * n_qubits)
            statetensor = statetensor.at[(0,) * n_qubits].set(1.)
        else:
            statetensor = statetensor_in
        params = jnp.atleast_1d(params)
        for gate_func, qubit_inds, param_inds in zip(gate_seq_callable, qubit_inds_seq, param_inds_array_seq):
            gate_unitary = _gate_func_to_unitary(gate_func, qubit_inds, param_inds, params)
            statetensor = apply_gate(statetensor, gate_unitary, qubit_inds)
        return statetensor

    non_parameterised = all([pi.size == 0 for pi in param_inds_array_seq])
    if non_parameterised:
        def no_params_to_statetensor_func(statetensor_in=None):
            return params_to_statetensor_func(jnp.array([]), statetensor_in)

        return no_params_to_statetensor_func

    return params_to_statetensor_func

# ---- qujax/statetensor_observable.py ----

def statetensor_to_single_expectation(statetensor, hermitian, qubit_inds):
    statetensor_new = apply_gate(statetensor, hermitian, qubit_inds)
    axes = tuple(range(statetensor.ndim))
    return jnp.tensordot(
        statetensor.conjugate(), statetensor_new, axes=(axes, axes)
    ).real


def get_hermitian_tensor(hermitian_seq):
    for h in hermitian_seq:
        check_hermitian(h)

    single_arrs = [paulis[h] if isinstance(h, str) else h for h in hermitian_seq]
    single_arrs = [
        h_arr.reshape((2,) * int(jnp.log2(h_arr.size))) for h_arr in single_arrs
    ]

    full_mat = single_arrs[0]
    for single_matrix in single_arrs[1:]:
        full_mat = jnp.kron(full_mat, single_matrix)
    full_mat = full_mat.reshape((2,) * int(jnp.log2(full_mat.size)))
    return full_mat


def _get_tensor_to_expectation_func(hermitian_seq_seq, qubits_seq_seq, coefficients, contraction_function):
    hermitian_tensors = [get_hermitian_tensor(h_seq) for h_seq in hermitian_seq_seq]

    def tensor_to_expectation_func(tensor):
        out = 0
        for hermitian, qubit_inds, coeff in zip(
            hermitian_tensors, qubits_seq_seq, coefficients
        ):
            out += coeff * contraction_function(
                tensor, hermitian, qubit_inds
            )
        return out

    return tensor_to_expectation_func


def get_statetensor_to_expectation_func(hermitian_seq_seq, qubits_seq_seq, coefficients):
    return _get_tensor_to_expectation_func(
        hermitian_seq_seq,
        qubits_seq_seq,
        coefficients,
        statetensor_to_single_expectation,
    )

# ---- examples/heisenberg_vqe.ipynb ----

def get_circuit(n_qubits, depth):
    
    n_params = 2 * n_qubits * (depth + 1)
    
    
    gates = ['H'] * n_qubits + ['Rx'] * n_qubits + ['Rz'] * n_qubits
    qubit_inds = [[i] for i in range(n_qubits)] * 3
    param_inds = [[]] * n_qubits + [[i] for i in range(n_qubits * 2)]
    
    k = 2 * n_qubits

    for _ in range(depth):
        for i in range(0, n_qubits - 1):
            gates.append('CZ')
            qubit_inds.append([i, i + 1])
            param_inds.append([])
        for i in range(n_qubits):
            gates.append('Rx')
            qubit_inds.append([i])
            param_inds.append([k])
            k += 1
        for i in range(n_qubits):
            gates.append('Ry')
            qubit_inds.append([i])
            param_inds.append([k])
            k += 1
    return gates, qubit_inds, param_inds, n_params

n_qubits = 3
depth = 1

gates, qubit_inds, param_inds, n_params = get_circuit(n_qubits, depth)

print(gates)
print(len(gates))

print(qubit_inds)
print(len(qubit_inds))

print(param_inds)
print(len(param_inds))

param_to_st = get_params_to_statetensor_func(gates, qubit_inds, param_inds)

params = random.uniform(random.PRNGKey(0), shape=(n_params,), minval=0., maxval=2.)
statetensor = param_to_st(params)
print(statetensor.shape)

statevector = statetensor.flatten()
print(statevector.shape)

sample_probs = jnp.square(jnp.abs(statevector))
print(sample_probs)

hamiltonian_gates = [['X', 'X'], ['Y', 'Y'], ['Z', 'Z']] * (n_qubits - 1)
hamiltonian_qubit_inds = [[int(i), int(i) + 1] for i in jnp.repeat(jnp.arange(n_qubits), 3)]
coefficients = [1.] * len(hamiltonian_qubit_inds) 

print('Gates:\t', hamiltonian_gates)
print('Qubits:\t', hamiltonian_qubit_inds)
print('Coefficients:\t', coefficients)

st_to_expectation = get_statetensor_to_expectation_func(hamiltonian_gates,
                                                        hamiltonian_qubit_inds,
                                                        coefficients)

expected_val = st_to_expectation(statetensor)
print(expected_val)

param_to_expectation = lambda param: st_to_expectation(param_to_st(param))

print(param_to_expectation(params))

new_params = random.uniform(random.PRNGKey(1), shape=(n_params,), minval=0., maxval=2.)
print(param_to_expectation(new_params))

cost_and_grad = value_and_grad(param_to_expectation)

print(cost_and_grad(params))

def vqe(init_param, n_steps, stepsize):
    params = jnp.zeros((n_steps, n_params))
    params = params.at[0].set(init_param)
    
    cost_vals = jnp.zeros(n_steps)
    cost_vals = cost_vals.at[0].set(param_to_expectation(init_param))
    
    for step in range(1, n_steps):
        cost_val, cost_grad = cost_and_grad(params[step - 1])
        cost_vals = cost_vals.at[step].set(cost_val)

        new_param = params[step - 1] - stepsize * cost_grad
        params = params.at[step].set(new_param)

        print('Iteration:', step, '\tCost:', cost_val, end='\r')
    print('\n')
    return params, cost_vals

vqe_params, vqe_cost_vals = vqe(params, n_steps=2, stepsize=0.01)
