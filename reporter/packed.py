"""Per-sample arrays as a record stores them: packed, and decoded only when something reads them.

A timing keeps every sample, its queuing time and the GPU's clocks, temperature and power per
sample: thousands of numbers per record, most of a record's size as JSON text and most of the
time it takes to read one. A record stores each such array as one string, ``"f64z:"`` followed by
the base64 of the zlib-compressed little-endian IEEE-754 doubles (every bit of every number
kept), and :class:`FloatArray` holds that string until the numbers are first read, so listing
hundreds of records never decodes the samples it does not look at.

In memory a :class:`FloatArray` reads as a list of floats would: ``len``, indexing, slices (a
list), iteration, ``==`` with a list, ``+`` (a list), ``min``/``max``/``statistics``. It is
read-only. The clock event reasons per sample (lists of names, mostly the same from sample to
sample) are stored run-length coded (:func:`read_reason_runs`); the samples of one run share one list
of names, which, like the rest of a record read from disk, is not to be changed in place.
"""

from __future__ import annotations

import base64
import binascii
import math
import sys
import zlib
from array import array
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, overload

from pydantic_core import core_schema

PREFIX = "f64z:"
SHORT = 64  # a packed text this long or shorter is cheap to decode (a few numbers, or none: "f64z:eNoDAAAAAAE=")


def pack(values: Iterable[float]) -> str:
    """Floats as one string: ``f64z:`` + base64(zlib(little-endian float64)). Lossless."""
    a = array("d", values)
    if sys.byteorder != "little":
        a.byteswap()
    return PREFIX + base64.b64encode(zlib.compress(a.tobytes(), 9)).decode("ascii")


def unpack(text: str) -> list[float]:
    """The floats :func:`pack` made ``text`` from; ValueError, saying why, for anything else,
    including a number that is not finite (records hold finite numbers only)."""
    if not text.startswith(PREFIX):
        raise ValueError(f"a packed array starts with {PREFIX!r}; this string starts with {text[:8]!r}")
    try:
        raw = zlib.decompress(base64.b64decode(text[len(PREFIX):], validate=True))
    except (binascii.Error, ValueError, zlib.error) as e:
        raise ValueError(f"a packed array that does not decode ({e})") from None
    if len(raw) % 8:
        raise ValueError(f"a packed array of {len(raw)} bytes, not a whole number of float64s")
    a = array("d")
    a.frombytes(raw)
    if sys.byteorder != "little":
        a.byteswap()
    if not all(map(math.isfinite, a)):
        bad = next(i for i, x in enumerate(a) if not math.isfinite(x))
        raise ValueError(f"item {bad} of a packed array is {a[bad]}: records hold finite numbers only")
    return a.tolist()


def _checked(values: Sequence[Any]) -> list[float]:
    out = []
    for i, x in enumerate(values):
        if isinstance(x, bool) or not isinstance(x, int | float):
            raise ValueError(f"item {i} is {type(x).__name__} {x!r}, not a number")
        if not math.isfinite(x):
            raise ValueError(f"item {i} is {x}: records hold finite numbers only")
        out.append(float(x))
    return out


class PackedArrayError(ValueError):
    """A packed array that does not decode, or holds a number that is not finite: names the record's
    file and field where the loader said which they were."""


class FloatArray(Sequence[float]):
    """A read-only list of floats that a record may hold packed until first read."""

    __slots__ = ("_expect", "_packed", "_values", "_where")

    def __init__(self, values: Iterable[float] = (), *, packed: str | None = None, where: str = "") -> None:
        self._packed = packed
        # for the error a bad packed array raises: 'logs/…/x.json: field samples_ms', or the (path, field)
        # it is made of (formatted only when needed: records are read by the hundred)
        self._where: str | tuple[Any, Any] = where
        self._values: list[float] | None = None if packed is not None else _checked(list(values))
        self._expect: int | None = None  # how many numbers the packed text must hold (expect)

    @classmethod
    def _of_packed(cls, packed: str, path: Any, field: Any) -> FloatArray:
        a = cls.__new__(cls)
        a._packed, a._where, a._values, a._expect = packed, (path, field), None, None
        return a

    def _place(self) -> str:
        if isinstance(self._where, str):
            return self._where
        path, field = self._where
        return f"{path}: field {field}" if path and field else str(path or "")

    def _list(self) -> list[float]:
        """The numbers, decoded on first use; never handed out, so the packed text cannot go stale."""
        if self._values is None:
            assert self._packed is not None
            try:
                values = unpack(self._packed)
                if self._expect is not None and len(values) != self._expect:
                    raise ValueError(f"a packed array of {len(values)} numbers where the record's n is {self._expect}")
            except ValueError as e:
                where = self._place()
                raise PackedArrayError(f"{where}: {e}" if where else str(e)) from None
            self._values = values
        return self._values

    def expect(self, n: int) -> int | None:
        """Hold the array to ``n`` numbers: returns how many it holds where that is known, without
        decoding, to differ from ``n``, else None. A list is counted; a packed text short enough to
        hold no more than a few numbers (:data:`SHORT`: the one of no numbers among them) is decoded
        and counted; a longer one is held to ``n`` when first read (PackedArrayError naming the file
        and field then, as for a number that is not finite): listing runs decodes no samples."""
        if self._values is None and self._packed is not None and len(self._packed) <= SHORT:
            self._list()
        if self._values is not None:
            return len(self._values) if len(self._values) != n else None
        self._expect = n
        return None

    def decoded(self) -> list[float] | None:
        """The numbers if they are already in memory (given as a list, or read before), else None: for
        a check that must not decode a packed array to look at them. Not to be changed in place."""
        return self._values

    def tolist(self) -> list[float]:
        """The numbers, as a new list."""
        return list(self._list())

    def packed(self) -> str:
        if self._packed is None:
            self._packed = pack(self._list())
        return self._packed

    def __len__(self) -> int:
        return len(self._list())

    @overload
    def __getitem__(self, i: int) -> float: ...
    @overload
    def __getitem__(self, i: slice) -> list[float]: ...

    def __getitem__(self, i: int | slice) -> float | list[float]:
        return self._list()[i]

    def __iter__(self) -> Iterator[float]:
        return iter(self._list())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, FloatArray):
            return self._list() == other._list()
        if isinstance(other, list | tuple):
            return self._list() == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __add__(self, other: Iterable[float]) -> list[float]:
        return self._list() + list(other)

    def __radd__(self, other: Iterable[float]) -> list[float]:
        return list(other) + self._list()

    def __repr__(self) -> str:
        return repr(self._list())

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        import numpy as np

        return np.asarray(self._list(), dtype=dtype)

    @classmethod
    def validate(cls, value: Any, info: core_schema.ValidationInfo | None = None) -> FloatArray:
        """What a record's field holds: packed text (schema 2), a list of numbers (schema 1, and
        records made in memory) or a FloatArray. A packed text is decoded when first read; the
        loader's context (``{"path": ...}``) lets a bad one name its file and field then."""
        if isinstance(value, str):  # first: what every record read from disk holds
            if not value.startswith(PREFIX):
                raise ValueError(f"a packed array starts with {PREFIX!r}; this string starts with {value[:8]!r}")
            if info is None:
                return cls._of_packed(value, None, None)
            context = info.context
            return cls._of_packed(value, context.get("path") if context else None, info.field_name)
        if isinstance(value, FloatArray):
            return value
        if isinstance(value, list | tuple):
            return cls(value)
        raise ValueError(f"expected a list of numbers or a packed array, found {type(value).__name__}")

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> core_schema.CoreSchema:
        def serialize(value: Any, info: core_schema.SerializationInfo) -> str | list[float]:
            array = value if isinstance(value, FloatArray) else cls(value)  # a list set by model_copy(update=...)
            return array.packed() if info.mode_is_json() else array.tolist()

        return core_schema.with_info_plain_validator_function(
            cls.validate, serialization=core_schema.plain_serializer_function_ser_schema(
                serialize, info_arg=True, when_used="always"))


def decode_all(model: Any) -> int:
    """Decode every packed array a record holds (raising :class:`PackedArrayError` for one that does
    not decode or holds a number that is not finite); returns how many numbers it read. For what
    accepts a record from outside (``report merge``, ``report migrate --check``): loading alone
    decodes nothing."""
    from pydantic import BaseModel

    return _decode_all(model, BaseModel)


_SCALARS = (str, int, float, bool, type(None))


def _decode_all(x: Any, base_model: type) -> int:
    if type(x) in _SCALARS:  # most of what a record holds: nothing to decode, nothing below
        return 0
    if isinstance(x, FloatArray):
        return len(x)
    count = 0
    if isinstance(x, base_model):
        for name in type(x).model_fields:
            count += _decode_all(getattr(x, name), base_model)
    elif isinstance(x, list | tuple):
        for y in x:
            if type(y) not in _SCALARS:
                count += _decode_all(y, base_model)
    elif isinstance(x, dict):
        for y in x.values():
            if type(y) not in _SCALARS:
                count += _decode_all(y, base_model)
    return count


def read_reason_runs(value: Any) -> list[list[str]]:
    """Clock event reasons per sample: run-length coded ``{"runs": [[count, [names]], ...]}``
    (schema 2) or one list of names per sample (schema 1). Samples of one run share one list."""
    if isinstance(value, dict):
        if set(value) != {"runs"} or not isinstance(value["runs"], list):
            raise ValueError('run-length coded reasons are {"runs": [[count, [names]], ...]}')
        out: list[list[str]] = []
        for i, run in enumerate(value["runs"]):
            if not (isinstance(run, list) and len(run) == 2 and isinstance(run[0], int)
                    and not isinstance(run[0], bool) and run[0] > 0):
                raise ValueError(f"run {i} is {run!r}, not [count, [names]]")
            out.extend([_names(run[1], f"run {i}")] * run[0])
        return out
    if isinstance(value, list):
        return [_names(names, f"item {i}") for i, names in enumerate(value)]
    raise ValueError(f'expected a list of lists of names or {{"runs": ...}}, found {type(value).__name__}')


def _names(names: Any, where: str) -> list[str]:
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise ValueError(f"{where} is {names!r}, not a list of names")
    return names


def reason_runs(value: list[list[str]]) -> dict[str, list]:
    """Names per sample, run-length coded as a record stores them."""
    runs: list[list] = []
    for names in value:
        if runs and runs[-1][1] == names:
            runs[-1][0] += 1
        else:
            runs.append([1, list(names)])
    return {"runs": runs}
