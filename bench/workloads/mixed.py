"""A realistic mix: what a small web service or batch job does all day.

Each round: builds order records, round-trips them through JSON, parses a
log with regular expressions, formats report lines three ways, runs an
object-oriented warehouse simulation made of many small methods, pushes
events through generator pipelines and renders a small template language.

Usage: mixed.py [ROUNDS]   (default 40). Deterministic (its own random
generator, no hash-order dependence): prints one checksum line that is the
same on every CPython 3.6+ with or without the library.
"""
import json
import re
import sys
import zlib


class Rng(object):
    """A linear congruential generator: the same numbers on every version."""

    def __init__(self, seed):
        self.state = seed & 0xFFFFFFFF

    def next(self):
        self.state = (self.state * 1103515245 + 12345) & 0x7FFFFFFF
        return self.state

    def below(self, n):
        return self.next() % n

    def choice(self, seq):
        return seq[self.below(len(seq))]


WORDS = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf",
         "hotel", "india", "juliet", "kilo", "lima", "mike", "november")


# ------------------------------------------------------------------ JSON
def make_order(rng, i):
    lines = []
    for j in range(1 + rng.below(5)):
        lines.append({"sku": "%s-%04d" % (rng.choice(WORDS), rng.below(10000)),
                      "qty": 1 + rng.below(9),
                      "price": round(rng.below(100000) / 100.0, 2)})
    return {"id": i, "customer": {"name": rng.choice(WORDS).title(),
                                  "tier": rng.choice(("gold", "silver", "bronze"))},
            "lines": lines, "notes": None if rng.below(3) else "rush",
            "tags": [rng.choice(WORDS) for _ in range(rng.below(4))]}


def order_total(order):
    return sum(line["qty"] * line["price"] for line in order["lines"])


def json_round_trip(rng, n):
    orders = [make_order(rng, i) for i in range(n)]
    text = json.dumps(orders, sort_keys=True)
    back = json.loads(text)
    assert back == orders
    pretty = json.dumps(back[: n // 4], indent=2, sort_keys=True)
    return text, pretty, sum(order_total(o) for o in back)


# ----------------------------------------------------------------- regex
LOG_RE = re.compile(r"^(?P<ip>\d+\.\d+\.\d+\.\d+) - - \[(?P<ts>[^\]]+)\] "
                    r"\"(?P<method>[A-Z]+) (?P<path>\S+) HTTP/1\.[01]\" "
                    r"(?P<status>\d{3}) (?P<size>\d+)$")
ID_RE = re.compile(r"/(\d+)(?=/|$)")
WORD_RE = re.compile(r"[a-z]+")


def make_log(rng, n):
    out = []
    for i in range(n):
        path = "/%s/%d/%s" % (rng.choice(WORDS), rng.below(1000), rng.choice(WORDS))
        out.append('10.%d.%d.%d - - [12/Mar/2024:10:%02d:%02d +0000] "%s %s HTTP/1.1" %d %d' % (
            rng.below(256), rng.below(256), rng.below(256), rng.below(60), rng.below(60),
            rng.choice(("GET", "GET", "POST", "PUT")), path,
            rng.choice((200, 200, 200, 301, 404, 500)), rng.below(50000)))
    return out


def analyse_log(lines):
    by_status = {}
    bytes_by_method = {}
    normalised = []
    for line in lines:
        m = LOG_RE.match(line)
        if m is None:
            continue
        status = m.group("status")
        by_status[status] = by_status.get(status, 0) + 1
        method = m.group("method")
        bytes_by_method[method] = bytes_by_method.get(method, 0) + int(m.group("size"))
        normalised.append(ID_RE.sub(lambda mm: "/<id:%d>" % (int(mm.group(1)) % 7), m.group("path")))
    words = {}
    for p in normalised:
        for w in WORD_RE.findall(p):
            words[w] = words.get(w, 0) + 1
    return sorted(by_status.items()), sorted(bytes_by_method.items()), sorted(words.items())[:5]


# ------------------------------------------------------------ formatting
def format_report(rows):
    out = []
    for name, qty, price in rows:
        out.append("%-10s %5d %10.2f" % (name, qty, price))
        out.append("{0:<10} {1:>5} {2:>10.2f}".format(name, qty, price))
        out.append(f"{name:<10} {qty:>5} {price:>10.2f} {qty * price:,.2f}")
    return "\n".join(out)


# ------------------------------------------------- OO simulation (small methods)
class Item(object):
    __slots__ = ("sku", "_qty", "_price")

    def __init__(self, sku, qty, price):
        self.sku = sku
        self._qty = qty
        self._price = price

    @property
    def qty(self):
        return self._qty

    @property
    def price(self):
        return self._price

    def value(self):
        return self.qty * self.price

    def take(self, n):
        n = min(n, self._qty)
        self._qty -= n
        return n

    def put(self, n):
        self._qty += n

    def is_empty(self):
        return self._qty == 0


class Shelf(object):
    def __init__(self, name):
        self.name = name
        self.items = {}

    def get(self, sku):
        return self.items.get(sku)

    def add(self, item):
        existing = self.get(item.sku)
        if existing is None:
            self.items[item.sku] = item
        else:
            existing.put(item.qty)

    def remove(self, sku, n):
        item = self.get(sku)
        if item is None:
            return 0
        got = item.take(n)
        if item.is_empty():
            del self.items[sku]
        return got

    def value(self):
        return sum(item.value() for item in self.items.values())

    def __len__(self):
        return len(self.items)


class Warehouse(object):
    def __init__(self, nshelves):
        self.shelves = [Shelf("S%02d" % i) for i in range(nshelves)]
        self.log = []

    def shelf_for(self, sku):
        return self.shelves[zlib.crc32(sku.encode()) % len(self.shelves)]

    def receive(self, sku, qty, price):
        self.shelf_for(sku).add(Item(sku, qty, price))
        self.record("in", sku, qty)

    def ship(self, sku, qty):
        got = self.shelf_for(sku).remove(sku, qty)
        self.record("out", sku, got)
        return got

    def record(self, kind, sku, qty):
        self.log.append((kind, sku, qty))

    def total_value(self):
        return sum(shelf.value() for shelf in self.shelves)

    def stock_count(self):
        return sum(len(shelf) for shelf in self.shelves)


def simulate(rng, steps):
    wh = Warehouse(8)
    skus = ["%s-%d" % (w, i) for w in WORDS[:6] for i in range(5)]
    shipped = 0
    for _ in range(steps):
        sku = rng.choice(skus)
        if rng.below(3):
            wh.receive(sku, 1 + rng.below(5), (1 + rng.below(500)) / 10.0)
        else:
            shipped += wh.ship(sku, 1 + rng.below(4))
    return shipped, round(wh.total_value(), 2), wh.stock_count(), len(wh.log)


# ---------------------------------------------------- generator pipelines
def events(rng, n):
    for i in range(n):
        yield {"seq": i, "kind": rng.choice(("click", "view", "buy")), "amount": rng.below(1000)}


def only(kind, stream):
    for e in stream:
        if e["kind"] == kind:
            yield e


def amounts(stream):
    for e in stream:
        yield e["amount"]


def windows(stream, size):
    buf = []
    for x in stream:
        buf.append(x)
        if len(buf) == size:
            yield tuple(buf)
            buf = []
    if buf:
        yield tuple(buf)


def pipeline(rng, n):
    result = []
    for kind in ("click", "view", "buy"):
        stream = windows(amounts(only(kind, events(rng, n))), 8)
        result.append(sum(max(w) - min(w) for w in stream))
    return result


# ------------------------------------------------------ template renderer
TOKEN_RE = re.compile(r"({{.*?}}|{%.*?%})")


class Node(object):
    def render(self, ctx):
        raise NotImplementedError


class Text(Node):
    def __init__(self, text):
        self.text = text

    def render(self, ctx):
        return self.text


class Var(Node):
    def __init__(self, expr):
        parts = [p.strip() for p in expr.split("|")]
        self.path = parts[0].split(".")
        self.filters = parts[1:]

    def lookup(self, ctx):
        value = ctx
        for part in self.path:
            value = value[part] if isinstance(value, dict) else getattr(value, part)
        return value

    def render(self, ctx):
        value = self.lookup(ctx)
        for f in self.filters:
            value = FILTERS[f](value)
        return str(value)


class For(Node):
    def __init__(self, var, seq, body):
        self.var = var
        self.seq = seq
        self.body = body

    def render(self, ctx):
        out = []
        for x in Var(self.seq).lookup(ctx):
            inner = dict(ctx)
            inner[self.var] = x
            out.append(render_nodes(self.body, inner))
        return "".join(out)


FILTERS = {"upper": lambda v: str(v).upper(), "money": lambda v: "%.2f" % v,
           "len": len, "title": lambda v: str(v).title()}


def parse_template(text):
    tokens = TOKEN_RE.split(text)
    nodes, stack = [], []
    for tok in tokens:
        if tok.startswith("{{"):
            nodes.append(Var(tok[2:-2].strip()))
        elif tok.startswith("{%"):
            words = tok[2:-2].split()
            if words[0] == "for":
                stack.append((nodes, words[1], words[3]))
                nodes = []
            elif words[0] == "endfor":
                body = nodes
                nodes, var, seq = stack.pop()
                nodes.append(For(var, seq, body))
        elif tok:
            nodes.append(Text(tok))
    return nodes


def render_nodes(nodes, ctx):
    return "".join(node.render(ctx) for node in nodes)


TEMPLATE = """<h1>{{ title | upper }}</h1>
<ul>{% for o in orders %}
  <li>#{{ o.id }} {{ o.customer.name | title }} ({{ o.lines | len }} lines)
  {% for l in o.lines %}<span>{{ l.sku }} x{{ l.qty }} @ {{ l.price | money }}</span>{% endfor %}</li>
{% endfor %}</ul>"""


def render_page(rng, n):
    orders = [make_order(rng, i) for i in range(n)]
    return render_nodes(parse_template(TEMPLATE), {"title": "orders", "orders": orders})


# ------------------------------------------------------------------- main
def one_round(rng, crc):
    text, pretty, total = json_round_trip(rng, 40)
    crc = zlib.crc32(text.encode(), crc)
    crc = zlib.crc32(pretty.encode(), crc)
    crc = zlib.crc32(("%.2f" % total).encode(), crc)
    crc = zlib.crc32(repr(analyse_log(make_log(rng, 150))).encode(), crc)
    rows = [(rng.choice(WORDS), rng.below(100), rng.below(100000) / 100.0) for _ in range(40)]
    crc = zlib.crc32(format_report(rows).encode(), crc)
    crc = zlib.crc32(repr(simulate(rng, 400)).encode(), crc)
    crc = zlib.crc32(repr(pipeline(rng, 300)).encode(), crc)
    crc = zlib.crc32(render_page(rng, 15).encode(), crc)
    return crc


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    rng = Rng(20240312)
    crc = 0
    for _ in range(rounds):
        crc = one_round(rng, crc)
    print("mixed(%d) checksum %08x" % (rounds, crc & 0xFFFFFFFF))


if __name__ == "__main__":
    main()
