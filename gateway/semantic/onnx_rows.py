"""MiniLM's word embeddings kept int8 in onnxruntime: rows looked up first, dequantised after.

The int8 export stores each weight as `Cast(int8) * scale`; onnxruntime's constant folding turns every
one into float32 at load, so the 30,522 × 384 word-embedding table (11 MB as int8) becomes 45 MB that a
question reads a few rows of. This rewrites that one chain of the graph, on the model's bytes before
the session is built, from

    Gather(Mul(Cast(W_q), scale), ids)          (folded to a float32 table)

to

    Mul(Cast(Gather(W_q, ids)), Gather(scale, ids))

which computes the same products on the rows the batch uses (the scale is per row), so nothing is
folded. The rest of the model is left to onnxruntime. Only protobuf's wire format is read here (no
`onnx` package): the graph's nodes are entries of field 1 of the graph (field 7 of the model), each with
inputs (1), outputs (2), name (3), op type (4) and attributes (5). When the graph does not have that
chain, the model's bytes come back unchanged.
"""

from __future__ import annotations

from collections.abc import Iterator

_LEN = 2  # the wire type of strings, bytes and sub-messages


def _varint(data: bytes | memoryview, pos: int) -> tuple[int, int]:
    out = shift = 0
    while True:
        b = data[pos]
        pos += 1
        out |= (b & 0x7F) << shift
        if not b & 0x80:
            return out, pos
        shift += 7


def _encode_varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _fields(data: memoryview) -> Iterator[tuple[int, int, memoryview, memoryview]]:
    """(field number, wire type, the whole entry, its payload: a varint's bytes or a length-delimited value)."""
    pos = 0
    while pos < len(data):
        start = pos
        key, pos = _varint(data, pos)
        wire = key & 7
        if wire == 0:
            value_at = pos
            _, pos = _varint(data, pos)
            payload = data[value_at:pos]  # the varint's bytes
        elif wire == 1:
            pos += 8
            payload = data[pos:pos]
        elif wire == 5:
            pos += 4
            payload = data[pos:pos]
        elif wire == _LEN:
            n, pos = _varint(data, pos)
            payload = data[pos:pos + n]
            pos += n
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")
        yield key >> 3, wire, data[start:pos], payload


def _entry(field: int, payload: bytes) -> bytes:
    return _encode_varint(field << 3 | _LEN) + _encode_varint(len(payload)) + payload


class _Node:
    def __init__(self, raw: memoryview) -> None:
        self.inputs: list[str] = []
        self.outputs: list[str] = []
        self.op = ""
        self.attributes: list[bytes] = []
        for field, _, entry, payload in _fields(raw):
            if field == 1:
                self.inputs.append(bytes(payload).decode())
            elif field == 2:
                self.outputs.append(bytes(payload).decode())
            elif field == 4:
                self.op = bytes(payload).decode()
            elif field == 5:
                self.attributes.append(bytes(entry))


def _node(op: str, inputs: list[str], outputs: list[str], name: str, attributes: tuple[bytes, ...] = ()) -> bytes:
    body = b"".join([*(_entry(1, x.encode()) for x in inputs), *(_entry(2, x.encode()) for x in outputs),
                     _entry(3, name.encode()), _entry(4, op.encode()), *attributes])
    return _entry(1, body)


def _is_axis_0(attribute: bytes) -> bool:
    """An AttributeProto (name: field 1, int value: field 3) that says `axis = 0`, Gather's default."""
    _, _, _, body = next(_fields(memoryview(attribute)))
    name, value = "", 0
    for field, wire, _, payload in _fields(body):
        if field == 1 and wire == _LEN:
            name = bytes(payload).decode()
        elif field == 3 and wire == 0:
            value, _ = _varint(payload, 0)
    return name == "axis" and value == 0


def gather_before_dequantise(model: bytes, table: str) -> bytes:
    """The model with `Gather(Mul(Cast(table_q), table_scale), ids)` rewritten to gather the int8 rows
    and their scales first (see the module's doc); `model` itself when that chain is not there."""
    view = memoryview(model)
    top = list(_fields(view))
    graph_at = next((i for i, (f, w, _, _) in enumerate(top) if f == 7 and w == _LEN), None)
    if graph_at is None:
        return model
    graph = list(_fields(top[graph_at][3]))
    nodes = {i: _Node(payload) for i, (f, w, _, payload) in enumerate(graph) if f == 1 and w == _LEN}
    producer = {out: i for i, n in nodes.items() for out in n.outputs}
    users = [i for i, n in nodes.items() if table in n.inputs]
    mul_at = producer.get(table)
    if mul_at is None or len(users) != 1:
        return model
    gather, mul = nodes[users[0]], nodes[mul_at]
    cast_at = producer.get(mul.inputs[0]) if len(mul.inputs) == 2 else None
    if (gather.op != "Gather" or not all(_is_axis_0(a) for a in gather.attributes) or gather.inputs[0] != table
            or mul.op != "Mul" or cast_at is None or nodes[cast_at].op != "Cast" or mul.inputs[1] != f"{table}_scale"):
        return model
    cast, ids, out = nodes[cast_at], gather.inputs[1], gather.outputs[0]
    if len(cast.inputs) != 1 or len(producer) != len({o for n in nodes.values() for o in n.outputs}):
        return model
    rows_q, rows_f, rows_scale = f"{table}_rows_q", f"{table}_rows_f", f"{table}_rows_scale"
    replacement = b"".join([
        _node("Gather", [cast.inputs[0], ids], [rows_q], f"{table}/gather_q"),
        _node("Gather", [mul.inputs[1], ids], [rows_scale], f"{table}/gather_scale"),
        _node("Cast", [rows_q], [rows_f], f"{table}/cast", tuple(cast.attributes)),
        _node("Mul", [rows_f, rows_scale], [out], f"{table}/dequantise"),
    ])
    # the four nodes take the Cast's place (their inputs are initializers and a graph input, so the
    # order stays topological); the old Mul and Gather go
    dropped = {mul_at, users[0]}
    parts = [replacement if i == cast_at else bytes(entry)
             for i, (_, _, entry, _) in enumerate(graph) if i not in dropped]
    new_graph = _entry(7, b"".join(parts))
    return b"".join(new_graph if i == graph_at else bytes(entry) for i, (_, _, entry, _) in enumerate(top))
