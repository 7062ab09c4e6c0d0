"""The identity of one kernel's machine code in a cubin: :func:`kernel_code_sha256`.

Two builds run the same kernel when the machine code (SASS) of the kernel and of every function it
reaches is the same bytes, linked the same way, with the same resources. A cubin holds more than
that: line tables and the PTX text (``-lineinfo``), the tool's options (``.note.nv.tkinfo``), and
the other kernels of the module, whose symbols shift every symbol index. So the hash is taken over
what the kernel is, by name, never by index or position:

* the ELF header's architecture (``e_machine`` and the low 24 bits of ``e_flags``, the SM and its
  features; the high bits follow ``-lineinfo``);
* for the kernel and each function it reaches through relocations (followed to a fixed point), the
  section's name and bytes (the SASS), its relocations as (offset, type, symbol name, addend), and
  the symbols the section defines (name, offset, size, type, binding, ``st_other``);
* the per-function attribute table (``.nv.info.<name>``: parameters, exit offsets, the maximum
  registers and threads asked for) with any symbol index in it replaced by the symbol's name, and
  the module table's (``.nv.info``) entries about these functions (registers, frame and stack size);
* the size of each function's shared, local and constant-bank sections, and the module's data: the
  bytes of its constant banks (``__constant__`` arrays, which the code addresses by bank and offset
  with no relocation), of its initialised globals, and of any data section a relocation points into.
  A constant of another kernel of the module therefore counts too: the answer errs on "different".

Debug sections, notes and other kernels are outside it, so ``-lineinfo`` on or off, or another
kernel added to the module, leaves the hash as it was; a changed instruction, register count,
shared-memory size or constant does not. A cubin the parser cannot read raises
:class:`KernelCodeError`; nothing here needs a GPU (``pyelftools`` reads the ELF).
"""

from __future__ import annotations

import hashlib
import io
import re
import struct
from collections.abc import Iterable

from .options import CudaCompileError


class KernelCodeError(CudaCompileError):
    """A cubin without the kernel, or one this reader does not understand."""


# EIATTR attributes whose payload starts with a symbol index (the module table's entries are about
# one function each; in a function's own table, PARAM_CBANK names its constant bank's section)
_SYMBOL_FIRST = {0x0A, 0x11, 0x12, 0x23, 0x2F}  # PARAM_CBANK, FRAME_SIZE, MIN_STACK, MAX_STACK, REGCOUNT
_PER_FUNCTION_PREFIXES = (".nv.info.", ".nv.shared.", ".nv.local.", ".nv.constant0.")


def kernel_code_sha256(cubin: bytes, kernel: str) -> str:
    """sha256 of ``kernel``'s machine code in ``cubin`` as the module docstring defines it.

    Raises :class:`KernelCodeError` when the cubin has no such kernel or cannot be read."""
    from elftools.common.exceptions import ELFError
    from elftools.elf.elffile import ELFFile

    try:
        elf = ELFFile(io.BytesIO(cubin))
        return _digest(elf, kernel)
    except (ELFError, struct.error, ValueError) as e:
        raise KernelCodeError(f"cubin: cannot read {kernel}'s code ({type(e).__name__}: {e})") from None


def kernel_names(cubin: bytes) -> list[str]:
    """The kernels (global functions with a ``.text.<name>`` section of their own) in ``cubin``."""
    from elftools.elf.elffile import ELFFile

    elf = ELFFile(io.BytesIO(cubin))
    symtab = elf.get_section_by_name(".symtab")
    out = []
    for sym in symtab.iter_symbols() if symtab is not None else ():
        if sym["st_info"]["type"] == "STT_FUNC" and sym["st_info"]["bind"] == "STB_GLOBAL":
            sec = sym["st_shndx"]
            if isinstance(sec, int) and elf.get_section(sec).name == f".text.{sym.name}":
                out.append(sym.name)
    return out


def _digest(elf, kernel: str) -> str:  # type: ignore[no-untyped-def]
    symtab = elf.get_section_by_name(".symtab")
    if symtab is None:
        raise KernelCodeError("cubin: no symbol table")
    symbols = list(symtab.iter_symbols())
    sections = list(elf.iter_sections())

    def symbol_name(index: int) -> str:
        sym = symbols[index]
        if sym["st_info"]["type"] == "STT_SECTION":
            return sections[sym["st_shndx"]].name
        return sym.name

    entry = next((s for s in symbols if s.name == kernel and s["st_info"]["type"] == "STT_FUNC"
                  and isinstance(s["st_shndx"], int)), None)
    if entry is None:
        raise KernelCodeError(f"cubin: no kernel named {kernel}")

    relocations: dict[int, list[tuple[int, str, str, int]]] = {}  # section index -> its relocations
    for sec in sections:
        if sec["sh_type"] in ("SHT_RELA", "SHT_REL") and sec["sh_info"]:
            rows = relocations.setdefault(sec["sh_info"], [])
            for r in sec.iter_relocations():
                addend = r["r_addend"] if r.is_RELA() else 0
                rows.append((r["r_offset"], str(r["r_info_type"]), symbol_name(r["r_info_sym"]), addend))

    # the kernel's text section and every text section its relocations reach, to a fixed point
    texts: list[int] = [entry["st_shndx"]]
    data: set[int] = set()
    i = 0
    while i < len(texts):
        for _, _, name, _ in relocations.get(texts[i], ()):
            target = next((k for k, s in enumerate(sections) if s.name == name), None)
            if target is None:  # a function symbol: its section
                sym = next((s for s in symbols if s.name == name and isinstance(s["st_shndx"], int)), None)
                target = sym["st_shndx"] if sym is not None else None
            if target is None:
                continue
            if sections[target].name.startswith(".text.") and target not in texts:
                texts.append(target)
            elif not sections[target].name.startswith(".text."):
                data.add(target)
        i += 1

    h = hashlib.sha256()

    def put(*parts: object) -> None:
        h.update(repr(parts).encode() + b"\n")

    # the architecture byte and its low flags; bits 24-27 follow whether line information was kept
    put("e_flags", elf.header["e_flags"] & 0x00FFFFFF, elf.header["e_machine"])
    names: set[str] = {s.name for s in symbols if s["st_shndx"] in texts}  # the functions and their sections
    names |= {sections[idx].name for idx in texts}
    for idx in texts:
        sec = sections[idx]
        fn = sec.name.removeprefix(".text.")
        put("text", sec.name, hashlib.sha256(sec.data()).hexdigest(), sec["sh_flags"])
        put("relocations", sorted(relocations.get(idx, ())))
        put("symbols", sorted((s.name, s["st_value"], s["st_size"], s["st_info"]["type"], s["st_info"]["bind"],
                               s["st_other"]["local"], s["st_other"]["visibility"])
                              for s in symbols if s["st_shndx"] == idx and s["st_info"]["type"] != "STT_SECTION"))
        for prefix in _PER_FUNCTION_PREFIXES:
            other = elf.get_section_by_name(prefix + fn)
            if other is None:
                continue
            if prefix == ".nv.info.":
                put("info", prefix + fn, list(_attributes(other.data(), symbol_name)))
            elif other["sh_type"] == "SHT_NOBITS":
                put("size", prefix + fn, other["sh_size"], other["sh_addralign"])
            else:
                put("bytes", prefix + fn, hashlib.sha256(other.data()).hexdigest(), other["sh_addralign"])
    module_info = elf.get_section_by_name(".nv.info")
    if module_info is not None:
        put("module info", [a for a in _attributes(module_info.data(), symbol_name)
                            if isinstance(a[2], tuple) and a[2][0] in names])
    # the module's own data: constant banks the code addresses directly (c[0x3][...], no relocation)
    # and initialised globals; shared by every kernel of the module, so counted for each
    data |= {k for k, sec in enumerate(sections) if re.fullmatch(r"\.nv\.constant\d+|\.nv\.global(\.init)?", sec.name)}
    for idx in sorted(data):
        sec = sections[idx]
        if sec["sh_type"] == "SHT_NOBITS":
            put("data size", sec.name, sec["sh_size"])
        else:
            put("data", sec.name, hashlib.sha256(sec.data()).hexdigest())
    return h.hexdigest()


def _attributes(table: bytes, symbol_name) -> Iterable[tuple[int, int, object]]:  # type: ignore[no-untyped-def]
    """The EIATTR entries of an ``.nv.info`` table as (format, attribute, value); a payload that starts
    with a symbol index has it as (name, rest of the payload)."""
    i = 0
    while i + 4 <= len(table):
        fmt, attr = table[i], table[i + 1]
        if fmt == 0x04:  # EIFMT_SVAL: a 16-bit size, then that many bytes
            size = struct.unpack_from("<H", table, i + 2)[0]
            payload = table[i + 4: i + 4 + size]
            i += 4 + size
            if attr in _SYMBOL_FIRST and len(payload) >= 4:
                index = struct.unpack_from("<I", payload)[0]
                yield fmt, attr, (symbol_name(index), payload[4:].hex())
            else:
                yield fmt, attr, payload.hex()
        else:  # EIFMT_NVAL, _BVAL, _HVAL: the value in the entry's last two bytes
            yield fmt, attr, table[i + 2: i + 4].hex()
            i += 4
