"""jax.experimental: io_callback (see tinyjax.lax.callback)."""
from tinyjax.lax.callback import io_callback

__all__ = ["io_callback"]
