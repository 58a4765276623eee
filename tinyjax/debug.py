"""jax.debug: print and callback, host callbacks that run where the code runs (see tinyjax.lax.callback)."""
from tinyjax.lax.callback import debug_print as print, debug_callback as callback   # noqa: A004  (JAX's names)

__all__ = ["print", "callback"]
