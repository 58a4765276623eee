# Copyright 2021 The JAX Authors.
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     https://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

"""tinyjax.example_libraries: JAX's example libraries `stax` (neural-net layers as (init_fun, apply_fun) pairs) and
`optimizers` ((init, update, get_params) triples), ported from jax/example_libraries on tinyjax.numpy, lax and random:
the same key gives JAX's parameters, the same steps JAX's numbers."""
