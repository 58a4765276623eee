"""The one package that touches tinygrad internals (pinned: tinygrad==0.14.0).

Everything tinyjax needs from tinygrad's UOp IR, buffers and runtime is imported or wrapped here, so a tinygrad upgrade
is this package's work; see docs/design.md, "tinygrad 0.14 IR facts". Every change tinyjax makes to tinygrad itself is
in `patches.py` (applied by `patches.install()`, listed in docs/design.md, "What importing tinyjax changes in
tinygrad"). Layers: `buffers` (placeholders, buffers, host data) < `fold` (device-less constants folded on the host) <
`ir` (the gather kernel, markers, calls) < `cpu_graph` (the CPU graph executor) < `gemm` (matrix products by BLAS on
the CPU) < `runtime` (TinyJit support, read checks, host calls, compiled steps, replays, eager values) < `patches`.
"""
from tinygrad import Tensor, dtypes
from tinygrad.dtype import DType, least_upper_dtype
from tinygrad.uop.ops import UOp, Ops, GroupOp
from tinygrad.mixin.gradient import compute_gradient   # tinygrad's reverse mode, used by tinyjax.vjp
from tinyjax._tg.buffers import static_shape, placeholder, allocated_buffer, OutputBuffers, sharding, shard_like, \
  placeholder_like, default_device, np_dtype, np_dtype_of, host_buffer, host_copy, host_dtype, host_input, read_array, write_array, run_on_host, \
  jit_input, dtype_supported, \
  plain_buffer, is_placeholder_buffer, \
  plain_buffer_key, stored_data, unfilled, host_value, host_rows
from tinyjax._tg.ir import gather, gather_args, dtype_name, marker, marker_arg, call_kind, inline_call, custom_call, \
  custom_rule_of, param_like, set_items, const_value, is_data, is_view, has_effects, mop, rop, broadcast_to, move_axis, param, \
  assign_into, stored_once, function_body, call_body
from tinyjax._tg.runtime import jit_capturing, kernel_search, codegen_settings, capturing_tinyjit, captured_replay, captured_nbytes, replay_buffers, \
  host_copies_filled, \
  jit_kernel_names, jit_captured, TINYGRAD_LOCK, preserved_tensors, tensor_method, add_read_check, check_read, \
  add_concrete_stand_in, concrete_stand_in, host_call, holds_host_call, reusable, scratch_of, with_fresh_scratch, in_read, \
  canonical_key, closed_buffers, rebound_capture, Step, run_steps, makes_rows, making_rows, row_or_run, switch_row, Replay, \
  scratch_like, constant_array, filled_buffer, copy_buffer, read_scalar, realize_lazy, \
  live_tensors, is_lazy, GraphMemo
from tinyjax._tg.patches import add_tensor_methods, install, set_weak_float

__all__ = ["set_weak_float", "Tensor", "UOp", "Ops", "GroupOp", "DType", "dtypes", "compute_gradient",
           "least_upper_dtype",
           "static_shape", "placeholder", "allocated_buffer", "OutputBuffers", "assign_into", "stored_once", "sharding", "shard_like",
           "placeholder_like",
           "default_device", "np_dtype", "np_dtype_of", "host_buffer", "host_copy", "host_dtype", "host_input", "read_array", "write_array",
           "run_on_host",
           "jit_input", "dtype_supported",
           "plain_buffer", "plain_buffer_key", "stored_data", "host_value", "host_rows", "is_placeholder_buffer",
           "gather", "gather_args", "dtype_name", "marker", "marker_arg", "call_kind", "inline_call", "custom_call", "custom_rule_of",
           "param_like", "set_items", "unfilled", "const_value", "is_data", "is_view", "has_effects", "mop", "rop", "broadcast_to", "move_axis",
           "param", "function_body", "call_body",
           "jit_capturing", "kernel_search", "codegen_settings", "capturing_tinyjit", "captured_replay", "captured_nbytes", "replay_buffers",
           "host_copies_filled",
           "jit_kernel_names", "jit_captured",
           "TINYGRAD_LOCK", "preserved_tensors", "tensor_method", "add_read_check", "check_read",
           "add_concrete_stand_in", "concrete_stand_in", "host_call", "holds_host_call", "reusable", "scratch_of",
           "with_fresh_scratch", "in_read",
           "canonical_key", "closed_buffers", "rebound_capture", "Step", "run_steps", "makes_rows", "making_rows", "row_or_run",
           "switch_row", "Replay",
           "scratch_like", "constant_array", "filled_buffer", "copy_buffer", "read_scalar",
           "realize_lazy", "live_tensors", "is_lazy", "GraphMemo",
           "add_tensor_methods", "install"]
