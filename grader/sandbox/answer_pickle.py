"""Scan an answer's pickle record before anything unpickles it.

An unpickler builds nothing executable from the globals it is allowed, but it still hashes dict
keys and set items while loading, in C and without a way to interrupt it: a key that is a DAG of
shared tuples (`t = (t, t)` sixty times, a few hundred bytes) takes exponential time to hash. And
torch.save's format has rebuild functions (quantized, sparse, nested tensors, sets, Counters) that
probes never send. This scan runs the pickle's stack machine on *kinds* of values only, linearly, and accepts
exactly what `torch.save` writes for a probe answer: protocol 2, the opcodes below, plain
tensors of the dtypes in `STORAGE_DTYPES`, dicts keyed by strings, lists, tuples, numbers.
"""
from __future__ import annotations

import struct

STORAGE_DTYPES = {  # the storage class torch.save names for each dtype a probe answer may hold
    "FloatStorage": "float32", "DoubleStorage": "float64", "HalfStorage": "float16", "BFloat16Storage": "bfloat16",
    "LongStorage": "int64", "IntStorage": "int32", "ShortStorage": "int16", "CharStorage": "int8",
    "ByteStorage": "uint8", "BoolStorage": "bool", "ComplexFloatStorage": "complex64",
    "ComplexDoubleStorage": "complex128",
}
GLOBALS = {f"torch\n{name}": "storage-type" for name in STORAGE_DTYPES} | {
    "torch._utils\n_rebuild_tensor_v2": "rebuild-tensor", "collections\nOrderedDict": "ordered-dict-type"}
ATOM, STR, LIST, DICT, MARK = "atom", "str", "list", "dict", "mark"
# BININT1, BININT2, BININT, BINFLOAT, NONE, NEWTRUE, NEWFALSE: the bytes of argument each takes
ATOM_ARGUMENT_BYTES = {0x4B: 1, 0x4D: 2, 0x4A: 4, 0x47: 8, 0x4E: 0, 0x88: 0, 0x89: 0}


class PickleRefused(Exception):
    """The pickle holds something a probe answer never does."""


def _tuple(items: list) -> tuple:
    return ("tuple", tuple(items))


def _pop_mark(stack: list) -> list:
    for index in range(len(stack) - 1, -1, -1):
        if stack[index] == MARK:
            items = stack[index + 1:]
            del stack[index:]
            return items
    raise PickleRefused("a collection without its mark")


def _reduce(function, args) -> object:
    """The only calls a probe answer needs: rebuild a tensor, and the empty OrderedDict of its hooks."""
    if function == "ordered-dict-type" and args == _tuple([]):
        return "ordered-dict"
    if function == "rebuild-tensor" and args[0] == "tuple" and len(args[1]) == 6:
        storage, offset, size, stride, requires_grad, hooks = args[1]
        shapes = [kind[0] == "tuple" and all(item == ATOM for item in kind[1]) for kind in (size, stride)]
        if storage == "storage" and offset == ATOM and all(shapes) and requires_grad == ATOM and hooks == "ordered-dict":
            return "tensor"
    raise PickleRefused("a call that is not a plain tensor rebuild")


def _persistent(pid) -> str:
    """torch.save's storage reference: ('storage', storage type, key, location, numel)."""
    if pid[0] == "tuple" and [k if isinstance(k, str) else k[0] for k in pid[1]] == [STR, "storage-type", STR, STR, ATOM]:
        return "storage"
    raise PickleRefused("a persistent reference that is not a storage")


def scan(data: bytes, max_string: int) -> None:
    """Raise PickleRefused unless `data` is a protocol-2 pickle of a dict made of answer values."""
    try:
        _scan(data, max_string)
    except (IndexError, struct.error):
        raise PickleRefused("a truncated pickle") from None


def _scan(data: bytes, max_string: int) -> None:
    stack: list = []
    memo: dict[int, object] = {}

    def pop():
        if not stack or stack[-1] == MARK:
            raise PickleRefused("a stack underflow")
        return stack.pop()

    def top():
        if not stack or stack[-1] == MARK:
            raise PickleRefused("a stack underflow")
        return stack[-1]

    if data[:2] != b"\x80\x02":
        raise PickleRefused("not pickle protocol 2")
    at = 2
    while True:
        op = data[at]
        at += 1
        if op == 0x71:  # BINPUT
            memo[data[at]] = top()
            at += 1
        elif op == 0x58:  # BINUNICODE
            (length,) = struct.unpack_from("<I", data, at)
            if length > max_string * 4:  # UTF-8 bytes; the walk after loading counts characters
                raise PickleRefused(f"a string of {length} bytes")
            at += 4 + length
            stack.append(STR)
        elif op in ATOM_ARGUMENT_BYTES:  # ints, floats, None, booleans
            at += ATOM_ARGUMENT_BYTES[op]
            stack.append(ATOM)
        elif op == 0x68 or op == 0x6A:  # BINGET, LONG_BINGET
            index = data[at] if op == 0x68 else struct.unpack_from("<I", data, at)[0]
            at += 1 if op == 0x68 else 4
            if index not in memo:
                raise PickleRefused("a reference to nothing")
            stack.append(memo[index])
        elif op == 0x28:  # MARK
            stack.append(MARK)
        elif op == 0x74:  # TUPLE
            stack.append(_tuple(_pop_mark(stack)))
        elif op in (0x85, 0x86, 0x87):  # TUPLE1..3
            items = [pop() for _ in range(op - 0x84)][::-1]
            stack.append(_tuple(items))
        elif op == 0x29:  # EMPTY_TUPLE
            stack.append(_tuple([]))
        elif op == 0x5D:  # EMPTY_LIST
            stack.append(LIST)
        elif op == 0x7D:  # EMPTY_DICT
            stack.append(DICT)
        elif op == 0x73 or op == 0x75:  # SETITEM, SETITEMS: only string keys, nothing else is hashed
            items = [pop(), pop()][::-1] if op == 0x73 else _pop_mark(stack)
            if len(items) % 2 or any(key != STR for key in items[::2]):
                raise PickleRefused("a dict entry whose key is not a string")
            if top() != DICT:
                raise PickleRefused("entries set on something other than a plain dict")
        elif op == 0x61 or op == 0x65:  # APPEND, APPENDS
            pop() if op == 0x61 else _pop_mark(stack)
            if top() != LIST:
                raise PickleRefused("an append to something other than a list")
        elif op == 0x52:  # REDUCE
            args = pop()
            stack.append(_reduce(pop(), args))
        elif op == 0x51:  # BINPERSID
            stack.append(_persistent(pop()))
        elif op == 0x63:  # GLOBAL: module and name, each ending in a newline
            second = data.find(b"\n", data.find(b"\n", at) + 1)
            name = data[at:second].decode("ascii", "replace") if second > at else ""
            if name not in GLOBALS:
                raise PickleRefused(f"the global {name.replace(chr(10), '.')!r}")
            at = second + 1
            stack.append(GLOBALS[name])
        elif op == 0x72:  # LONG_BINPUT
            memo[struct.unpack_from("<I", data, at)[0]] = top()
            at += 4
        elif op == 0x8A:  # LONG1: beyond 8 bytes an int is no count, size or peak a probe reports
            if data[at] > 8:
                raise PickleRefused("an integer of more than 64 bits")
            at += 1 + data[at]
            stack.append(ATOM)
        elif op == 0x2E:  # STOP
            if stack != [DICT] or at != len(data):
                raise PickleRefused("a pickle that is not one dict")
            return
        else:
            raise PickleRefused(f"the pickle opcode {bytes([op])!r}")
