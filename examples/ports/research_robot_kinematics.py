# Source: https://github.com/tud-phi/ics-pa-sv/blob/main/jax_double_pendulum/kinematics/forward_kinematics.py, sections
#   "forward_kinematics / extended_forward_kinematics", with kinematics/jacobian.py, kinematics/jacobian_dot.py and
#   robot_parameters.py (same repository)
# Exercises: forward kinematics of a planar two-link arm, its Jacobian by jax.jacfwd / jax.jacrev / jax.jacobian(argnums=1)
#   against the analytic one, jit over a dict of Python-int robot parameters, jnp.array of traced scalars, J @ th_d
# Adapted: the modules' functions merged into one file (imports merged, the ROBOT_PARAMS dict trimmed to l1, l2);
#   the closing lines (fixed joint angles, autodiff Jacobians compared with the analytic ones) added

from typing import Tuple

import jax
from jax import Array, jit
from jax import numpy as jnp

ROBOT_PARAMS = dict(
    l1=2,  # Length of link 1 [m]
    l2=1,  # Length of link 2 [m]
)


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


rp = ROBOT_PARAMS
th = jnp.array([0.3, 1.1])
th_d = jnp.array([0.5, -0.2])
th_dd = jnp.array([0.1, 0.4])

x_eb, x = forward_kinematics(rp, th)
J = jacobian(rp, th)
J_fwd = jax.jacfwd(lambda th: forward_kinematics(rp, th)[1])(th)
J_rev = jax.jacrev(lambda th: forward_kinematics(rp, th)[1])(th)
J_both = jax.jacobian(forward_kinematics, argnums=1)(rp, th)
print("end effector", x, "elbow", x_eb)
print("analytic J", J, "jacfwd J", J_fwd)
J_d = jacobian_dot(rp, th, th_d)
J_d_fwd = jax.jacfwd(lambda th: jacobian(rp, th) @ th_d)(th) @ th_d
print("J_dot @ th_d", J_d @ th_d, "from jacfwd", J_d_fwd)

x, x_d, x_dd, x_eb = extended_forward_kinematics(rp, th, th_d, th_dd)
print("x, x_d, x_dd", x, x_d, x_dd)
