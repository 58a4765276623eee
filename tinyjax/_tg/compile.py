"""A schedule's new CPU kernels compiled by one clang process (tinygrad's CPU device, clang, x86-64).

tinygrad compiles each kernel with its own clang process, ~55 ms of CPU of which ~50 are the process starting (clang
on an empty file), whatever the kernel. Here tinygrad generates each kernel's code as usual (its rewrites, its C
source), and the sources of the kernels one realize needs are compiled together, as one translation unit, by the same
`ClangCompiler` with the same flags; each source is unchanged, its function renamed by a `#define` around it (kernels
of different code can share a name). The object is relocated once by tinygrad's ELF loader (`jit_loader`), and each
kernel's program is that image behind a jump to its function: tinygrad's CPU runtime runs a binary that is not an
ELF object as it is, entered at its first byte. Measured on the hessian bench case's 9 sources: 0.73 s of clang CPU
-> 0.30 s.

The programs go to tinygrad's in-process program cache as its own would; on disk (CCACHE) each kernel's program is
kept in a table of tinyjax's (it is not the ELF object tinygrad's table holds), and a kernel tinygrad compiled
earlier is still found in tinygrad's table. `compile_kernels` returns False when this does not apply (another
compiler or architecture, one kernel left to compile, BEAM search, tinygrad's debug output of binaries, HCQ2): the
caller then takes tinygrad's own path, as it does when anything here raises (the object not the expected one, a
relocation that is not position-independent): a failure costs a compile, never a result.
"""
from __future__ import annotations
import ctypes, struct
import tinygrad.codegen as _codegen
from tinygrad.codegen import to_program_cache, to_program_key
from tinygrad.helpers import DEBUG, diskcache_get, diskcache_put, getenv
from tinygrad.renderer import Renderer
from tinygrad.runtime.autogen import libc
from tinygrad.runtime.support.compiler_cpu import ClangCompiler
from tinygrad.runtime.support.elf import elf_loader, jit_loader
from tinygrad.uop.ops import UOp, Ops

MAX_UNIT = 16       # kernels per translation unit (each program carries the unit's whole image)
_ENTRY = 64         # bytes before the image: a jump to the kernel, then padding keeping the image's alignment
compiles = 0        # clang processes started here (read by tests)

class _Deferred:
  """The compiler a renderer copy carries during one kernel's code generation: a cached program is returned at once,
  otherwise the source is kept and an empty placeholder returned (replaced once the unit is compiled)."""
  def __init__(self, real: ClangCompiler):
    self.real, self.src = real, ""   # src: the source to compile ("": none, a cached program was returned)

  def table(self) -> str | None: return None if self.real.cachekey is None else f"tinyjax_unit_{self.real.cachekey}"

  def compile_cached(self, src: str) -> bytes:
    if self.real.cachekey is not None and (lib := diskcache_get(self.real.cachekey, src)) is not None: return lib
    if (t := self.table()) is not None and (lib := diskcache_get(t, src)) is not None: return lib
    assert not getenv("ASSERT_COMPILE"), f"tried to compile with ASSERT_COMPILE set\n{src}"
    self.src = src
    return b""

def _with_compiler(renderer: Renderer, compiler: _Deferred) -> Renderer:
  # a copy, not the device's renderer changed for a while: another thread compiling meanwhile keeps the real compiler
  r = object.__new__(type(renderer))
  r.__dict__.update(vars(renderer))
  r.compiler = compiler   # type: ignore[assignment]
  return r

def _applies(todo: list[tuple[UOp, Renderer]]) -> bool:
  return len(todo) >= 2 and DEBUG < 7 and not getenv("HCQ2") and not any(getattr(ast.arg, "beam", 0) for ast, _ in todo) \
    and all(type(r.compiler) is ClangCompiler and r.compiler.arch == "x86_64" for _, r in todo)

def compile_kernels(todo: list[tuple[UOp, Renderer]]) -> bool:
  """Generate and compile these kernels (ASTs not in tinygrad's program cache, each once) into the program cache,
  their new sources compiled together. False: not done here (see the module's docstring), nothing changed."""
  if not _applies(todo): return False
  made = []
  for ast, renderer in todo:
    deferred = _Deferred(renderer.compiler)   # type: ignore[arg-type]
    made.append((to_program_key(ast, renderer), _codegen.do_to_program(ast, _with_compiler(renderer, deferred)), deferred))
  new = [(i, d) for i, (_, _, d) in enumerate(made) if d.src]
  libs: dict[int, bytes] = {}
  for at in range(0, len(new), MAX_UNIT):
    unit = new[at:at + MAX_UNIT]
    srcs = [(made[i][1].arg.function_name, d.src) for i, d in unit]
    got = compile_unit(unit[0][1].real, srcs) if len(unit) > 1 else [unit[0][1].real.compile(srcs[0][1])]
    libs.update(zip((i for i, _ in unit), got, strict=True))
  done = {}
  for i, (key, prg, deferred) in enumerate(made):
    if i in libs:
      assert prg.src[-1].op is Ops.BINARY and prg.src[-1].arg == b""
      prg = prg.replace(src=prg.src[:-1] + (UOp(Ops.BINARY, arg=libs[i]),))
      if (t := deferred.table()) is not None: diskcache_put(t, deferred.src, libs[i])
    done[key] = prg
  to_program_cache.update(done)   # only complete programs, once all are compiled
  return True

def compile_unit(compiler: ClangCompiler, srcs: list[tuple[str, str]]) -> list[bytes]:
  """(function name, C source) of tinygrad kernels -> one program each (see the module's docstring), one clang run."""
  global compiles
  names = [f"tinyjax_kernel_{i}" for i in range(len(srcs))]
  compiles += 1
  obj = compiler.compile("".join(f"#define {fn} {n}\n{src}\n#undef {fn}\n" for n, (fn, src) in zip(names, srcs, strict=True)))
  image = jit_loader(obj)   # raises on a symbol outside the object (no library is given)
  _, sections, relocs = elf_loader(obj)
  if any(r[2] not in (libc.R_X86_64_PC32, libc.R_X86_64_PLT32) for r in relocs):
    raise RuntimeError("a relocation that depends on where the image is loaded")
  if max(s.header.sh_addralign for s in sections) > _ENTRY: raise RuntimeError("a section aligned beyond the entry jump")
  symtab = next(s for s in sections if s.header.sh_type == libc.SHT_SYMTAB)
  strtab = sections[symtab.header.sh_link].content
  syms = (libc.Elf64_Sym * (len(symtab.content) // ctypes.sizeof(libc.Elf64_Sym))).from_buffer_copy(symtab.content)
  where = {strtab[s.st_name:strtab.index(b"\0", s.st_name)].decode(): sections[s.st_shndx].header.sh_addr + s.st_value
           for s in syms if s.st_shndx != 0 and s.st_shndx < len(sections)}
  # jmp rel32 (from the end of its 5 bytes) to the function in the image after the entry bytes; int3 padding
  return [b"\xe9" + struct.pack("<i", _ENTRY + where[n] - 5) + b"\xcc" * (_ENTRY - 5) + image for n in names]
