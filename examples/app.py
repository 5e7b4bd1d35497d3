"""The bundled example: a small program with a call chain worth seeing.

main -> handle_requests -> render_page -> (format_rows, checksum)
"""
import hashlib
import json


class Row(object):
    def __init__(self, n):
        self.n = n

    def as_dict(self):
        return {"id": self.n, "square": self.n * self.n, "label": "row-%d" % self.n}


def format_rows(rows):
    return "\n".join(json.dumps(r.as_dict(), sort_keys=True) for r in rows)


def checksum(text):
    digest = 0
    for ch in text:
        digest = (digest * 31 + ord(ch)) & 0xFFFFFFFF
    return digest ^ int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)


def render_page(n):
    rows = [Row(i) for i in range(n)]
    body = format_rows(rows)
    return checksum(body)


def handle_requests(count):
    total = 0
    for i in range(count):
        total = (total * 33 + render_page(200 + i % 50)) & 0xFFFFFFFF
    return total


def main():
    print("checksum %08x" % handle_requests(400))


if __name__ == "__main__":
    main()
