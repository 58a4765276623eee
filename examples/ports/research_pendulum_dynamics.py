# Source: https://github.com/tud-phi/ics-pa-sv/blob/main/jax_double_pendulum/dynamics.py, sections "dynamical_matrices /
#   continuous_forward_dynamics / continuous_inverse_dynamics / continuous_state_space_dynamics / discrete_forward_dynamics /
#   continuous_linear_state_space_representation", with integrators.py ("euler_step / rk4_step") and robot_parameters.py
# Exercises: rigid-body dynamics of a double pendulum under jit with a dict of Python-number parameters and array default
#   arguments, jnp.linalg.inv, jit(static_argnums=(0,), static_argnames=("ode_fun",)) with a lambda passed by keyword,
#   functools.partial, RK4 steps; the symbolic (sympy-generated) linearization A, B checked against
#   jax.jacfwd(partial(continuous_state_space_dynamics, rp), argnums=(0, 1), has_aux=True)
# Adapted: dynamics.py up to the end of continuous_linear_state_space_representation (the closed-loop variant left out),
#   with the integrators and ROBOT_PARAMS merged in (imports merged); the closing lines (fixed state, 5 RK4 steps,
#   inverse-dynamics round trip, the autodiff linearization check) added

from functools import partial
from jax import Array, jit
import jax
from jax import numpy as jnp
from typing import Callable, Tuple

ROBOT_PARAMS = dict(
    l1=2,  # Length of link 1 [m]
    lc1=1,  # Distance of CoM of link 1 from base [m]
    m1=10,  # Mass of link 1 [kg]
    j1=3,  # Inertia of link 1 [kg*m^2] about its CoM
    l2=1,  # Length of link 2 [m]
    lc2=0.5,  # Distance of CoM of link 2 from elbow [m]
    m2=6,  # Mass of link 2 [kg]
    j2=2,  # Inertia of link 2 [kg*m^2] about its CoM
    g=9.81,  # Gravitational acceleration [m/s^2]
)


@partial(
    jit,
    static_argnums=(0,),
    static_argnames=("ode_fun",),
)
def euler_step(ode_fun: Callable, x: Array, dt: Array) -> Array:
    """
    Euler's integration of the state `x` with the derivative `dx_dt` and time step `dt`.
    Args:
        ode_fun: function that computes the time derivative of the state `x`.
            Needs to conform to the signature: ode_fun(x) -> dx_dt
        x: current state of shape (num_state_dims, )
        dt: time step of shape ( ) [s]
    Returns:
        x_next: next state of shape (num_state_dims, )
    """
    dx = ode_fun(x)
    return x + dt * dx


@partial(
    jit,
    static_argnums=(0,),
    static_argnames=("ode_fun",),
)
def rk4_step(ode_fun: Callable, x: Array, dt: Array) -> Array:
    """
    Runge-Kutta / RK4 integration of the state `x` with the derivative `dx_dt` and time step `dt`.
    Args:
        ode_fun: function that computes the time derivative of the state `x`.
            Needs to conform to the signature: ode_fun(x) -> dx_dt
        x: current state of shape (num_state_dims, )
        dt: time step of shape ( ) [s]
    Returns:
        x_next: next state of shape (num_state_dims, )
    """
    k1 = ode_fun(x)
    k2 = ode_fun(x + dt * k1 / 2)
    k3 = ode_fun(x + dt * k2 / 2)
    k4 = ode_fun(x + dt * k3)

    x_next = x + 1 / 6 * (k1 + 2 * k2 + 2 * k3 + k4) * dt
    return x_next


@jit
def dynamical_matrices(rp: dict, th: Array, th_d: Array) -> Tuple[Array, Array, Array]:
    """
    Computes the components of the Equations of Motion (EoM), which also referred to as RBD matrices.
    The EoM are formulated as:
        M @ th_dd + C @ th_d + G = tau
    where tau is the configuration-space torque vector.
    Args:
        rp: dictionary of robot parameters
        th: link angles of shape (2, )
        th_d: link angular velocities of shape (2, )
    Returns:
        M: inertial matrix of shape (2, 2)
        C: coriolis and centrifugal matrix of shape (2, 2)
        G: gravitational matrix of shape (2, )
    """
    c1 = jnp.cos(th[0])
    c2 = jnp.cos(th[1])
    c21 = jnp.cos(th[1] - th[0])
    s21 = jnp.sin(th[1] - th[0])

    # Dynamic matrices
    M = jnp.array(
        [
            [
                rp["j1"] + rp["m1"] * rp["lc1"] ** 2 + rp["m2"] * rp["l1"] ** 2,
                rp["m2"] * rp["l1"] * rp["lc2"] * c21,
            ],
            [
                rp["m2"] * rp["l1"] * rp["lc2"] * c21,
                rp["j2"] + rp["m2"] * rp["lc2"] ** 2,
            ],
        ]
    )
    C = jnp.array(
        [
            [0, -rp["m2"] * rp["l1"] * rp["lc2"] * s21 * th_d[1]],
            [rp["m2"] * rp["l1"] * rp["lc2"] * s21 * th_d[0], 0],
        ]
    )
    G = jnp.array(
        [
            (rp["m1"] * rp["lc1"] + rp["m2"] * rp["l1"]) * rp["g"] * c1,
            rp["m2"] * rp["g"] * rp["lc2"] * c2,
        ]
    )

    return M, C, G


@jit
def continuous_forward_dynamics(
    rp: dict,
    th: Array,
    th_d: Array,
    tau: Array = jnp.zeros((2,)),
) -> Array:
    """
    Compute the continuous forward dynamics of the system
    Args:
        rp: dictionary of robot parameters
        th: link angles of double pendulum of shape (2, )
        th_d: link angular velocities of double pendulum of shape (2, )
        tau: link torques of double pendulum of shape (2, )
    Returns:
        th_dd: link angular accelerations of double pendulum of shape (2, )
    """
    M, C, G = dynamical_matrices(rp, th, th_d)

    # link angular accelerations
    th_dd = jnp.linalg.inv(M) @ (tau - C @ th_d - G)

    return th_dd


@jit
def continuous_inverse_dynamics(
    rp: dict,
    th: Array,
    th_d: Array,
    th_dd: Array = jnp.zeros((2,)),
) -> Array:
    """
    Compute the continuous inverse dynamics of the system
    Args:
        rp: dictionary of robot parameters
        th: link angles of double pendulum of shape (2, )
        th_d: link angular velocities of double pendulum of shape (2, )
        th_dd: link angular accelerations of double pendulum of shape (2, )
    Returns:
        tau: link torques of double pendulum of shape (2, )
    """
    M, C, G = dynamical_matrices(rp, th, th_d)

    # link torques
    tau = M @ th_dd + C @ th_d + G

    return tau


def continuous_state_space_dynamics(
    rp: dict,
    x: Array,
    tau: Array,
) -> Tuple[Array, Array]:
    """
    Compute the continuous forward dynamics of the system in state-space representation
    Args:
        rp: dictionary of robot parameters
        x: system state of shape (4, ) consisting of the link angles and velocities
        tau: link torques of shape (2, )
    Returns:
        dx_dt: time derivative of the system state of shape (4, )
        y: system output of shape (2, ) consisting of the link angles
    """
    # split the state into link angles and velocities
    th, th_d = jnp.split(x, 2)

    # compute the link angular accelerations
    th_dd = continuous_forward_dynamics(rp, th, th_d, tau)

    # time derivative of state
    dx_dt = jnp.concatenate([th_d, th_dd])

    # the system output are the two link angles
    y = th

    return dx_dt, y


@jit
def discrete_forward_dynamics(
    rp: dict,
    dt: Array,
    th_curr: Array,
    th_d_curr: Array,
    tau: Array = jnp.zeros((2,)),
) -> Tuple[Array, Array, Array]:
    """
    Compute the discrete forward dynamics of the system
    Args:
        rp: dictionary of robot parameters
        dt: time step between the current and the next state [s]
        th_curr: current link angles of double pendulum of shape (2, )
        th_d_curr: current link angular velocities of double pendulum of shape (2, )
        tau: link torques of double pendulum of shape (2, )
    Returns:
        th_next: link angles at the next time step of double pendulum of shape (2, )
        th_d_next: link angular velocities at the next time step of double pendulum of shape (2, )
        th_dd: link angular accelerations between current and next time step of double pendulum of shape (2, )
    """
    th_dd = continuous_forward_dynamics(rp, th_curr, th_d_curr, tau)

    x_next = rk4_step(
        # generate `ode_fun`, which conforms to the signature ode_fun(x) -> dx_dt
        ode_fun=lambda _x: partial(continuous_state_space_dynamics, rp, tau=tau)(_x)[0],
        x=jnp.concatenate([th_curr, th_d_curr]),  # concatenate the current state
        dt=dt,  # time step
    )
    th_next, th_d_next = jnp.split(x_next, 2)

    return th_next, th_d_next, th_dd


def continuous_linear_state_space_representation(
    rp: dict,
    th_eq: Array,
    th_d_eq: Array = jnp.zeros((2,)),
    tau_eq: Array = jnp.zeros((2,)),
) -> Tuple[Array, Array, Array, Array]:
    """
    Linearize the system about the specified state (th, th_d) and input tau
    and return the linearized system in state space representation

    Args:
        rp: dictionary of robot parameters
        th_eq: equilibrium link angles of double pendulum of shape (2, )
        th_d_eq: equilibrium link angular velocities of double pendulum of shape (2, )
        tau_eq: equilibrium link torques of double pendulum of shape (2, )

    Returns:
        A: state transition matrix of shape (4, 4)
        B: input matrix of shape (4, 2)
        C: output matrix of shape (2, 4)
        D: feed-through matrix of shape (2, 2)
    """
    th1, th2 = th_eq[0], th_eq[1]
    th_d1, th_d2 = th_d_eq[0], th_d_eq[1]
    tau1, tau2 = tau_eq[0], tau_eq[1]
    l1, l2 = rp["l1"], rp["l2"]
    lc1, lc2 = rp["lc1"], rp["lc2"]
    m1, m2 = rp["m1"], rp["m2"]
    j1, j2 = rp["j1"], rp["j2"]
    g = rp["g"]

    A = jnp.array(
        [
            [0, 0, 1, 0],
            [0, 0, 0, 1],
            [
                (
                    2
                    * l1**2
                    * lc2**2
                    * m2**2
                    * (
                        l1
                        * lc2
                        * m2
                        * (
                            -g * lc2 * m2 * jnp.cos(th2)
                            + l1 * lc2 * m2 * th_d1**2 * jnp.sin(th1 - th2)
                            + tau2
                        )
                        * jnp.cos(th1 - th2)
                        + (j2 + lc2**2 * m2)
                        * (
                            g * (l1 * m2 + lc1 * m1) * jnp.cos(th1)
                            + l1 * lc2 * m2 * th_d2**2 * jnp.sin(th1 - th2)
                            - tau1
                        )
                    )
                    * jnp.sin(th1 - th2)
                    * jnp.cos(th1 - th2)
                    + (
                        -(l1**2)
                        * lc2**2
                        * m2**2
                        * th_d1**2
                        * jnp.cos(th1 - th2) ** 2
                        + l1
                        * lc2
                        * m2
                        * (
                            -g * lc2 * m2 * jnp.cos(th2)
                            + l1 * lc2 * m2 * th_d1**2 * jnp.sin(th1 - th2)
                            + tau2
                        )
                        * jnp.sin(th1 - th2)
                        + (j2 + lc2**2 * m2)
                        * (
                            g * (l1 * m2 + lc1 * m1) * jnp.sin(th1)
                            - l1 * lc2 * m2 * th_d2**2 * jnp.cos(th1 - th2)
                        )
                    )
                    * (
                        j1 * j2
                        + j1 * lc2**2 * m2
                        + j2 * l1**2 * m2
                        + j2 * lc1**2 * m1
                        - l1**2 * lc2**2 * m2**2 * jnp.cos(th1 - th2) ** 2
                        + l1**2 * lc2**2 * m2**2
                        + lc1**2 * lc2**2 * m1 * m2
                    )
                )
                / (
                    j1 * j2
                    + j1 * lc2**2 * m2
                    + j2 * l1**2 * m2
                    + j2 * lc1**2 * m1
                    - l1**2 * lc2**2 * m2**2 * jnp.cos(th1 - th2) ** 2
                    + l1**2 * lc2**2 * m2**2
                    + lc1**2 * lc2**2 * m1 * m2
                )
                ** 2,
                l1
                * lc2
                * m2
                * (
                    -2
                    * l1
                    * lc2
                    * m2
                    * (
                        l1
                        * lc2
                        * m2
                        * (
                            -g * lc2 * m2 * jnp.cos(th2)
                            + l1 * lc2 * m2 * th_d1**2 * jnp.sin(th1 - th2)
                            + tau2
                        )
                        * jnp.cos(th1 - th2)
                        + (j2 + lc2**2 * m2)
                        * (
                            g * (l1 * m2 + lc1 * m1) * jnp.cos(th1)
                            + l1 * lc2 * m2 * th_d2**2 * jnp.sin(th1 - th2)
                            - tau1
                        )
                    )
                    * jnp.sin(th1 - th2)
                    * jnp.cos(th1 - th2)
                    + (
                        -lc2
                        * m2
                        * (g * jnp.sin(th2) - l1 * th_d1**2 * jnp.cos(th1 - th2))
                        * jnp.cos(th1 - th2)
                        + th_d2**2 * (j2 + lc2**2 * m2) * jnp.cos(th1 - th2)
                        - (
                            -g * lc2 * m2 * jnp.cos(th2)
                            + l1 * lc2 * m2 * th_d1**2 * jnp.sin(th1 - th2)
                            + tau2
                        )
                        * jnp.sin(th1 - th2)
                    )
                    * (
                        j1 * j2
                        + j1 * lc2**2 * m2
                        + j2 * l1**2 * m2
                        + j2 * lc1**2 * m1
                        - l1**2 * lc2**2 * m2**2 * jnp.cos(th1 - th2) ** 2
                        + l1**2 * lc2**2 * m2**2
                        + lc1**2 * lc2**2 * m1 * m2
                    )
                )
                / (
                    j1 * j2
                    + j1 * lc2**2 * m2
                    + j2 * l1**2 * m2
                    + j2 * lc1**2 * m1
                    - l1**2 * lc2**2 * m2**2 * jnp.cos(th1 - th2) ** 2
                    + l1**2 * lc2**2 * m2**2
                    + lc1**2 * lc2**2 * m1 * m2
                )
                ** 2,
                -2
                * l1**2
                * lc2**2
                * m2**2
                * th_d1
                * jnp.sin(2 * th1 - 2 * th2)
                / (
                    2 * j1 * j2
                    + 2 * j1 * lc2**2 * m2
                    + 2 * j2 * l1**2 * m2
                    + 2 * j2 * lc1**2 * m1
                    - l1**2 * lc2**2 * m2**2 * jnp.cos(2 * th1 - 2 * th2)
                    + l1**2 * lc2**2 * m2**2
                    + 2 * lc1**2 * lc2**2 * m1 * m2
                ),
                -2
                * l1
                * lc2
                * m2
                * th_d2
                * (j2 + lc2**2 * m2)
                * jnp.sin(th1 - th2)
                / (
                    j1 * j2
                    + j1 * lc2**2 * m2
                    + j2 * l1**2 * m2
                    + j2 * lc1**2 * m1
                    - l1**2 * lc2**2 * m2**2 * jnp.cos(th1 - th2) ** 2
                    + l1**2 * lc2**2 * m2**2
                    + lc1**2 * lc2**2 * m1 * m2
                ),
            ],
            [
                l1
                * lc2
                * m2
                * (
                    -2
                    * l1
                    * lc2
                    * m2
                    * (
                        l1
                        * lc2
                        * m2
                        * (
                            g * (l1 * m2 + lc1 * m1) * jnp.cos(th1)
                            + l1 * lc2 * m2 * th_d2**2 * jnp.sin(th1 - th2)
                            - tau1
                        )
                        * jnp.cos(th1 - th2)
                        + (j1 + l1**2 * m2 + lc1**2 * m1)
                        * (
                            -g * lc2 * m2 * jnp.cos(th2)
                            + l1 * lc2 * m2 * th_d1**2 * jnp.sin(th1 - th2)
                            + tau2
                        )
                    )
                    * jnp.sin(th1 - th2)
                    * jnp.cos(th1 - th2)
                    + (
                        th_d1**2
                        * (j1 + l1**2 * m2 + lc1**2 * m1)
                        * jnp.cos(th1 - th2)
                        - (
                            g * (l1 * m2 + lc1 * m1) * jnp.sin(th1)
                            - l1 * lc2 * m2 * th_d2**2 * jnp.cos(th1 - th2)
                        )
                        * jnp.cos(th1 - th2)
                        - (
                            g * (l1 * m2 + lc1 * m1) * jnp.cos(th1)
                            + l1 * lc2 * m2 * th_d2**2 * jnp.sin(th1 - th2)
                            - tau1
                        )
                        * jnp.sin(th1 - th2)
                    )
                    * (
                        j1 * j2
                        + j1 * lc2**2 * m2
                        + j2 * l1**2 * m2
                        + j2 * lc1**2 * m1
                        - l1**2 * lc2**2 * m2**2 * jnp.cos(th1 - th2) ** 2
                        + l1**2 * lc2**2 * m2**2
                        + lc1**2 * lc2**2 * m1 * m2
                    )
                )
                / (
                    j1 * j2
                    + j1 * lc2**2 * m2
                    + j2 * l1**2 * m2
                    + j2 * lc1**2 * m1
                    - l1**2 * lc2**2 * m2**2 * jnp.cos(th1 - th2) ** 2
                    + l1**2 * lc2**2 * m2**2
                    + lc1**2 * lc2**2 * m1 * m2
                )
                ** 2,
                lc2
                * m2
                * (
                    2
                    * l1**2
                    * lc2
                    * m2
                    * (
                        l1
                        * lc2
                        * m2
                        * (
                            g * (l1 * m2 + lc1 * m1) * jnp.cos(th1)
                            + l1 * lc2 * m2 * th_d2**2 * jnp.sin(th1 - th2)
                            - tau1
                        )
                        * jnp.cos(th1 - th2)
                        + (j1 + l1**2 * m2 + lc1**2 * m1)
                        * (
                            -g * lc2 * m2 * jnp.cos(th2)
                            + l1 * lc2 * m2 * th_d1**2 * jnp.sin(th1 - th2)
                            + tau2
                        )
                    )
                    * jnp.sin(th1 - th2)
                    * jnp.cos(th1 - th2)
                    + (
                        -(l1**2) * lc2 * m2 * th_d2**2 * jnp.cos(th1 - th2) ** 2
                        + l1
                        * (
                            g * (l1 * m2 + lc1 * m1) * jnp.cos(th1)
                            + l1 * lc2 * m2 * th_d2**2 * jnp.sin(th1 - th2)
                            - tau1
                        )
                        * jnp.sin(th1 - th2)
                        + (g * jnp.sin(th2) - l1 * th_d1**2 * jnp.cos(th1 - th2))
                        * (j1 + l1**2 * m2 + lc1**2 * m1)
                    )
                    * (
                        j1 * j2
                        + j1 * lc2**2 * m2
                        + j2 * l1**2 * m2
                        + j2 * lc1**2 * m1
                        - l1**2 * lc2**2 * m2**2 * jnp.cos(th1 - th2) ** 2
                        + l1**2 * lc2**2 * m2**2
                        + lc1**2 * lc2**2 * m1 * m2
                    )
                )
                / (
                    j1 * j2
                    + j1 * lc2**2 * m2
                    + j2 * l1**2 * m2
                    + j2 * lc1**2 * m1
                    - l1**2 * lc2**2 * m2**2 * jnp.cos(th1 - th2) ** 2
                    + l1**2 * lc2**2 * m2**2
                    + lc1**2 * lc2**2 * m1 * m2
                )
                ** 2,
                2
                * l1
                * lc2
                * m2
                * th_d1
                * (j1 + l1**2 * m2 + lc1**2 * m1)
                * jnp.sin(th1 - th2)
                / (
                    j1 * j2
                    + j1 * lc2**2 * m2
                    + j2 * l1**2 * m2
                    + j2 * lc1**2 * m1
                    - l1**2 * lc2**2 * m2**2 * jnp.cos(th1 - th2) ** 2
                    + l1**2 * lc2**2 * m2**2
                    + lc1**2 * lc2**2 * m1 * m2
                ),
                2
                * l1**2
                * lc2**2
                * m2**2
                * th_d2
                * jnp.sin(2 * th1 - 2 * th2)
                / (
                    2 * j1 * j2
                    + 2 * j1 * lc2**2 * m2
                    + 2 * j2 * l1**2 * m2
                    + 2 * j2 * lc1**2 * m1
                    - l1**2 * lc2**2 * m2**2 * jnp.cos(2 * th1 - 2 * th2)
                    + l1**2 * lc2**2 * m2**2
                    + 2 * lc1**2 * lc2**2 * m1 * m2
                ),
            ],
        ]
    )

    B = jnp.array(
        [
            [0, 0],
            [0, 0],
            [
                (j2 + lc2**2 * m2)
                / (
                    j1 * j2
                    + j1 * lc2**2 * m2
                    + j2 * l1**2 * m2
                    + j2 * lc1**2 * m1
                    - l1**2 * lc2**2 * m2**2 * jnp.cos(th1 - th2) ** 2
                    + l1**2 * lc2**2 * m2**2
                    + lc1**2 * lc2**2 * m1 * m2
                ),
                -l1
                * lc2
                * m2
                * jnp.cos(th1 - th2)
                / (
                    j1 * j2
                    + j1 * lc2**2 * m2
                    + j2 * l1**2 * m2
                    + j2 * lc1**2 * m1
                    - l1**2 * lc2**2 * m2**2 * jnp.cos(th1 - th2) ** 2
                    + l1**2 * lc2**2 * m2**2
                    + lc1**2 * lc2**2 * m1 * m2
                ),
            ],
            [
                -l1
                * lc2
                * m2
                * jnp.cos(th1 - th2)
                / (
                    j1 * j2
                    + j1 * lc2**2 * m2
                    + j2 * l1**2 * m2
                    + j2 * lc1**2 * m1
                    - l1**2 * lc2**2 * m2**2 * jnp.cos(th1 - th2) ** 2
                    + l1**2 * lc2**2 * m2**2
                    + lc1**2 * lc2**2 * m1 * m2
                ),
                (j1 + l1**2 * m2 + lc1**2 * m1)
                / (
                    j1 * j2
                    + j1 * lc2**2 * m2
                    + j2 * l1**2 * m2
                    + j2 * lc1**2 * m1
                    - l1**2 * lc2**2 * m2**2 * jnp.cos(th1 - th2) ** 2
                    + l1**2 * lc2**2 * m2**2
                    + lc1**2 * lc2**2 * m1 * m2
                ),
            ],
        ]
    )
    C = jnp.array(
        [
            [1.0, 0.0, 0.0, 0.0],
            [0.0, 1.0, 0.0, 0.0],
        ]
    )
    D = jnp.array([[0.0, 0.0], [0.0, 0.0]])

    return A, B, C, D


rp = ROBOT_PARAMS
th = jnp.array([0.4, -0.3])
th_d = jnp.array([0.2, 0.5])
tau = jnp.array([1.0, -0.5])

M, C, G = dynamical_matrices(rp, th, th_d)
th_dd = continuous_forward_dynamics(rp, th, th_d, tau)
print("M", M, "C", C, "G", G)
print("th_dd", th_dd, "tau round trip", continuous_inverse_dynamics(rp, th, th_d, th_dd))

dt = 1e-2
th_curr, th_d_curr = th, th_d
for _ in range(5):
    th_curr, th_d_curr, th_dd_curr = discrete_forward_dynamics(rp, dt, th_curr, th_d_curr, tau)
print("after 5 RK4 steps", th_curr, th_d_curr)
x_euler = euler_step(lambda _x: continuous_state_space_dynamics(rp, _x, tau)[0], jnp.concatenate([th, th_d]), dt)

A, B, C_out, D = continuous_linear_state_space_representation(rp, th, th_d, tau)
(A_ad, B_ad), y = jax.jacfwd(partial(continuous_state_space_dynamics, rp), argnums=(0, 1), has_aux=True)(
    jnp.concatenate([th, th_d]), tau)
print("A", A, "A by jacfwd", A_ad)
print("B", B, "B by jacfwd", B_ad)
