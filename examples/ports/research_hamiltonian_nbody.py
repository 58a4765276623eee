# Source: https://github.com/ImperialCollegeLondon/ReCoDE-Hamiltonian-Systems-Jax/blob/main/hdynamics/hdynamics.py, section "class Dynamics",
#   with hdynamics/dynamics/harmonic_oscillator.py and hdynamics/dynamics/nbody.py (same repository)
# Exercises: Hamiltonian dynamics dx/dt = J grad H(x) (Greydanus et al. style): jax.jit(jax.grad(self.H)) of a bound method,
#   symplectic form by slicing/concatenate, jit of a closure, N-body Hamiltonian with reshape/unpacking/jnp.tril/jnp.outer
# Adapted: excerpt of the three files merged into one (docstrings kept, plotting methods dropped); generate_trajectory and the
#   jax.experimental.ode import left out (odeint needs lax control flow, issue 11); instead the rate of change is evaluated at
#   fixed states and 10 explicit Euler steps are taken in a Python loop

from abc import ABC, abstractmethod

import jax
import jax.numpy as jnp
class Dynamics(ABC):
    """Abstract base class for a Hamiltonian dynamical system.

    Attributes:
        cdim (int): Dimensionality of q and p (configuration and momentum space).
        pdim (int): Dimensionality of the phase space (2 * cdim).
    """

    def __init__(self, cdim):
        """Initialise the dynamical system.

        Args:
            cdim (int): Dimensionality of q and p (configuration and momentum space).
        """
        self.cdim = cdim
        self.pdim = cdim * 2

        self.jac_h = jax.jit(jax.grad(self.H))

    @abstractmethod
    def H(self, x):
        """Return the Hamiltonian (energy) at phase space location x.

        Args:
            x (array-like): Phase space vector of shape (pdim,).

        Returns:
            float: Scalar energy value at x.
        """
        pass

    @staticmethod
    def symplectic_form(x):
        """Return the canonical symplectic form for a phase space vector x = [q, p].

        Args:
            x (array-like): Phase space vector of shape (2*D,).

        Returns:
            jax.numpy.ndarray: Symplectic form vector of shape (2*D,).

        Raises:
            ValueError: If x is not a 1D array or does not have even length.
        """
        if len(x.shape) != 1:
            raise ValueError(f"symplectic form expects a vector of shape (M,). Got: {x.shape}.")
        if (len(x) % 2) != 0:
            raise ValueError(f"input shape should be even. Got {x.shape}.")
        D = x.shape[0] // 2
        q, p = x[:D], x[D:]
        return jnp.concatenate([p, -q])

    def get_rate_of_change(self):
        """Return a function grad_x(x, t) suitable for ODE integration.

        The returned function computes the symplectic gradient of the Hamiltonian at each state x.

        Returns:
            Callable: A function grad_x(x, t) that returns the time derivative of x.
        """

        def grad_x(x, t):
            return self.symplectic_form(self.jac_h(x))

        return jax.jit(grad_x)


class HarmonicOscillator(Dynamics):
    """Dynamics of a one-dimensional simple harmonic oscillator.

    Models a system with Hamiltonian
        H(q, p) = p^2/(2m) + 0.5 * k * q^2,
    where q is position and p is momentum.

    Attributes:
        m (float): Mass of the oscillator.
        k (float): Spring constant.
    """

    def __init__(self, m=1.0, k=1.0):
        """Initialise the harmonic oscillator.

        Args:
            m (float): Mass of the oscillator.
            k (float): Spring constant.
        """
        super().__init__(cdim=1)
        self.m = m
        self.k = k

    def H(self, x, eps=1.0):
        """Compute the Hamiltonian (total energy) for a given state.

        Args:
            x (array-like): State vector [q, p], where q is position and p is momentum.
            eps (float, optional): Unused, included for interface compatibility.

        Returns:
            float: The total energy of the system at state x.

        Raises:
            ValueError: If x does not have shape (2,).
        """
        if x.shape[0] != 2:
            raise ValueError(f"x must have shape (2,), got shape {x.shape} and value {x}")

        q, p = x
        pot_energy = 0.5 * self.k * (q**2)
        kin_energy = (p**2) / (2 * self.m)
        return pot_energy + kin_energy


class Nbody(Dynamics):
    """Dynamics of an N-body gravitational system.

    Simulates a system of N bodies interacting via Newtonian gravity in a given dimension.
    Positions and momenta are packed as (positions, momenta) in the phase space vector.
    """

    def __init__(self, dim, n_bodies, gravity=1.0, masses=1.0):
        """Initialise N-body dynamics.

        Args:
            dim (int): Number of spatial dimensions.
            n_bodies (int): Number of bodies in the system.
            gravity (float): Gravitational constant (default 1.0).
            masses (float or array): Mass of each body (scalar or array of length n_bodies).

        Raises:
            ValueError: If dim < 2 or n_bodies < 1.
        """
        if dim < 2:
            raise ValueError("dim must be at least 2 for N-body dynamics.")
        if n_bodies < 1:
            raise ValueError("n_bodies must be at least 1 for N-body dynamics.")

        phase_space_dim = dim * n_bodies
        super().__init__(phase_space_dim)

        self.dim = dim
        self.n_bodies = n_bodies
        self.gravity = gravity

        # Ensure masses is an array of shape (n_bodies,)
        if isinstance(masses, (int, float)):
            self.masses = jnp.full(self.n_bodies, masses)
        else:
            self.masses = masses

        # Precompute the outer product of masses for pairwise interactions
        self.mass_outer_product = jnp.outer(self.masses, self.masses)  # (n_bodies, n_bodies)

    def H(self, x, eps=0.1):
        """Hamiltonian (total energy) of the N-body system.

        Args:
            x (array): Phase space vector of shape (2 * n_bodies * dim,).
                First half: positions, second half: momenta.
            eps (float): Softening parameter to avoid singularities in the potential.

        Returns:
            float: The total energy (kinetic + potential) of the system.
        """
        if len(x) != self.pdim:
            raise ValueError(f"x must have length {self.pdim}. Got shape {x.shape} and value {x}")

        # Unpack phase space vector into positions and momenta
        positions, momenta = x.reshape(2, self.n_bodies, self.dim)

        # Kinetic energy: sum(p^2 / (2m)) for each body
        kinetic_energy = jnp.sum(jnp.sum(momenta**2, axis=1) / (2 * self.masses))

        # Compute pairwise displacement vectors between all bodies
        pairwise_displacements = positions.reshape(self.n_bodies, 1, self.dim) - positions.reshape(
            1, self.n_bodies, self.dim
        )  # (n_bodies, n_bodies, dim)
        # Squared distances between all pairs
        pairwise_squared_distances = jnp.sum(pairwise_displacements**2, axis=2)  # (n_bodies, n_bodies)

        # Potential energy: sum over unique pairs, softened by eps to avoid singularity
        # Use tril(..., -1) to sum only lower triangle (i < j), avoiding double-counting and self-interaction
        potential_energy = -self.gravity * jnp.sum(
            jnp.tril(
                self.mass_outer_product / jnp.sqrt(pairwise_squared_distances + (eps**2)),
                -1,
            )
        )

        hamiltonian = kinetic_energy + potential_energy
        return hamiltonian


oscillator = HarmonicOscillator(m=2.0, k=0.5)
x0 = jnp.array([1.0, 0.5])
print("H", oscillator.H(x0), "dx/dt", oscillator.get_rate_of_change()(x0, 0.0))

nbody = Nbody(dim=2, n_bodies=3, masses=jnp.array([1.0, 2.0, 0.5]))
state = jnp.array([1.0, 0.0, -0.5, 0.8, -0.4, -0.9, 0.0, 0.4, -0.2, 0.0, 0.3, -0.6])
grad_x = nbody.get_rate_of_change()
rate = grad_x(state, 0.0)
print("N-body H", nbody.H(state), "dx/dt", rate)
energies = []
for i in range(10):
  state = state + 0.01 * grad_x(state, i * 0.01)
  energies.append(nbody.H(state))
energies = jnp.stack(energies)
print("final state", state)
