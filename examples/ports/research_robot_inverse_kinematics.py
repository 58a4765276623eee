# Source: https://github.com/tud-phi/ics-pa-sv/blob/main/jax_double_pendulum/kinematics/inverse_kinematics.py, section
#   "inverse_kinematics / _compute_theta", with kinematics/forward_kinematics.py, kinematics/jacobian.py,
#   kinematics/jacobian_dot.py, utils.py ("normalize_link_angles", "damped_pinv") and robot_parameters.py (same repository)
# Exercises: analytic inverse kinematics of a planar two-link arm under jit: lax.select on reachability and on
#   1 / jnp.linalg.cond(J) > 0, jnp.linalg.solve with the Jacobian, arctan2, jnp.mod angle wrapping; damped pseudo-inverse
#   with lax.select on a Python bool and jnp.linalg.inv; a forward-kinematics round trip
# Adapted: the modules' functions merged into one file (imports merged, the ROBOT_PARAMS dict trimmed to l1, l2);
#   the closing lines (fixed joint angles, FK -> IK round trip, damped_pinv of the Jacobian) added

from typing import Tuple

import jax
from jax import Array, jit, lax
from jax import numpy as jnp

ROBOT_PARAMS = dict(
    l1=2,  # Length of link 1 [m]
    l2=1,  # Length of link 2 [m]
)


def normalize_link_angles(th: Array) -> Array:
    """
    Normalize the link angles `th` to the interval [-pi, pi].
    """
    th_norm = jnp.mod(th + jnp.pi, 2 * jnp.pi) - jnp.pi
    return th_norm


def damped_pinv(A: Array, damping: float = 0.0) -> Array:
    """
    Computes the damped pseudo-inverse of the matrix A.
    Args:
        A: The matrix to be pseudo-inverted of shape (m, n).
        damping: The damping factor lambda.
    Returns:
        A_pinv: The pseudo-inverse of A of shape (n, m).
    """
    A_pinv = lax.select(
        A.shape[0] >= A.shape[1],
        on_true=jnp.linalg.inv(A.T @ A + damping**2 * jnp.eye(A.shape[1]))
        @ A.T,  # left pseudo-inverse
        on_false=A.T
        @ jnp.linalg.inv(
            A @ A.T + damping**2 * jnp.eye(A.shape[0])
        ),  # right pseudo-inverse
    )

    return A_pinv


@jit
def jacobian(rp: dict, th: Array) -> Array:
    """
    Computes the positional Jacobian of the end-effector with respect to the link angles
    :param rp: dictionary of robot parameters
    :param th: link angles of shape (2, )
    :return J: positional Jacobian of end-effector of shape (2, 2)
    """
    J = jnp.array(
        [
            [-rp["l1"] * jnp.sin(th[0]), -rp["l2"] * jnp.sin(th[1])],
            [rp["l1"] * jnp.cos(th[0]), rp["l2"] * jnp.cos(th[1])],
        ]
    )

    return J


@jit
def jacobian_dot(rp: dict, th: Array, th_d: Array) -> Array:
    """
    Computes the positional Jacobian of the end-effector with respect to the link angles
    :param rp: dictionary of robot parameters
    :param th: link angles of shape (2, )
    :param th_d: link angular velocities of shape (2, )
    :return J_d: time derivative of positional Jacobian of end-effector of shape (2, 2)
    """
    J_dot = jnp.array(
        [
            [
                -rp["l1"] * jnp.cos(th[0]) * th_d[0],
                -rp["l2"] * jnp.cos(th[1]) * th_d[1],
            ],
            [
                -rp["l1"] * jnp.sin(th[0]) * th_d[0],
                -rp["l2"] * jnp.sin(th[1]) * th_d[1],
            ],
        ]
    )

    return J_dot


@jit
def forward_kinematics(rp: dict, th: Array) -> Tuple[Array, Array]:
    """
    Computes the xy positions of the tip of the links
    Args:
        rp: dictionary of robot parameters
        th: link angles of shape (2, )
    Returns:
        x_eb: position of the elbow of shape (2, )
        x: position of the end effector of shape (2, )
    """
    # Compute the elbow position
    x_eb = jnp.array(
        [
            rp["l1"] * jnp.cos(th[0]),
            rp["l1"] * jnp.sin(th[0]),
        ]
    )

    # compute the end effector position
    x = x_eb + jnp.array(
        [
            rp["l2"] * jnp.cos(th[1]),
            rp["l2"] * jnp.sin(th[1]),
        ]
    )

    return x_eb, x


@jit
def extended_forward_kinematics(
    rp: dict, th: Array, th_d: Array, th_dd: Array
) -> Tuple[Array, Array, Array, Array]:
    """
    Computes the extended forward kinematics of the double pendulum.
    This includes the position, velocity and acceleration of the end effector.
    Args:
        rp: dictionary of robot parameters
        th: link angles of shape (2, )
        th_d: link angular velocities of shape (2, )
        th_dd: link angular accelerations of shape (2, )
    Returns:
        x: position of the end effector of shape (2, )
        x_d: velocity of the end effector of shape (2, )
        x_dd: acceleration of the end effector of shape (2, )
    """

    x_eb, x = forward_kinematics(rp, th)

    J = jacobian(rp, th)
    # velocity in Cartesian space
    x_d = J @ th_d

    J_d = jacobian_dot(rp, th, th_d)
    # acceleration in Cartesian space
    x_dd = J @ th_dd + J_d @ th_d

    return x, x_d, x_dd, x_eb


@jit
def inverse_kinematics(
    rp: dict,
    th: Array,
    x_des: Array,
    x_d_des: Array,
    x_dd_des: Array,
) -> Tuple[Array, Array, Array]:
    """
    Computes the inverse kinematics of the double pendulum
        - Follow a pre-computed trajectory (x_des^T, x_d_des^T, x_dd_des^T)^T as closely as possible
        - As robot state is not unique (th = a or th = a + 2 * pi is the same in task-space),
            compute the closest value to the current theta
    :param rp: dictionary of robot parameters
    :param th: current link angles of shape (2, )
    :param x_des: desired end-effector position in Cartesian space of shape (2, )
    :param x_d_des: desired end-effector velocity in Cartesian space of shape (2, )
    :param x_dd_des: desired end-effector acceleration in Cartesian space of shape (2, )
    :return th: link angles of shape (2, )
    :return th_d: link angular velocities of shape (2, )
    :return th_dd: link angular accelerations of shape (2, )
    """
    A = (
        x_des[0] ** 2
        + x_des[1] ** 2
        + rp["l1"] ** 2
        - rp["l2"] ** 2
        + 2 * rp["l1"] * x_des[0]
    )
    B = -4 * rp["l1"] * x_des[1]
    C = (
        x_des[0] ** 2
        + x_des[1] ** 2
        + rp["l1"] ** 2
        - rp["l2"] ** 2
        - 2 * rp["l1"] * x_des[0]
    )

    # save th as current link angles
    th_curr = th
    # catch Cartesian coordinates that are not reachable by the end-effector
    th = lax.select(
        (B**2 - 4 * A * C) >= 0,  # pred
        _compute_theta(rp, th, x_des, A, B, C),  # on_true
        th,  # on_false
    )

    # difference of computed next th to the current th mapped to [-pi, pi]
    th_diff = normalize_link_angles(th - th_curr)
    th = th_curr + th_diff

    J = jacobian(rp, th)
    # checker whether the Jacobian is singular
    # the matrix reciprocal condition is the inverse of the condition number
    # this is provided by the rcond function in Matlab
    # https://www.thecodingforums.com/threads/rcond-in-numpy.696616/
    th_d = lax.select(
        1 / jnp.linalg.cond(J) > 0,  # pred
        jnp.linalg.solve(J, x_d_des),  # on_true
        jnp.zeros((2,)),  # on_false
    )
    th_dd = lax.select(
        1 / jnp.linalg.cond(J) > 0,  # pred
        jnp.linalg.solve(J, x_dd_des - jacobian_dot(rp, th, th_d) @ th_d),  # on_true
        jnp.zeros((2,)),  # on_false
    )

    return th, th_d, th_dd


@jit
def _compute_theta(
    _rp: dict,
    _th: Array,
    _x_des: Array,
    _A: Array,
    _B: Array,
    _C: Array,
) -> Array:
    th1 = 2 * jnp.arctan2(-_B + jnp.sqrt(_B**2 - 4 * _A * _C), 2 * _A)
    th2 = jnp.arctan2(
        _x_des[1] - _rp["l1"] * jnp.sin(th1), _x_des[0] - _rp["l1"] * jnp.cos(th1)
    )

    th = jnp.array([th1, th2])
    return th


rp = ROBOT_PARAMS
th = jnp.array([0.3, 1.1])
th_d = jnp.array([0.5, -0.2])
th_dd = jnp.array([0.1, 0.4])

x, x_d, x_dd, x_eb = extended_forward_kinematics(rp, th, th_d, th_dd)
print("x, x_d, x_dd", x, x_d, x_dd)
th_ik, th_d_ik, th_dd_ik = inverse_kinematics(rp, th + 0.05, x, x_d, x_dd)
print("IK", th_ik, th_d_ik, th_dd_ik)
print("FK of the IK solution", forward_kinematics(rp, th_ik)[1])
J_pinv = damped_pinv(jacobian(rp, th), 0.1)
print("damped pinv", J_pinv)
