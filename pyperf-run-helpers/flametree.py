"""The HTML flame graph: samples as d3-flame-graph's call tree, written into
its HTML template (d3-flamegraph-base.html, which `make` fetches).

The tree is the JSON perf's own flamegraph script writes ({"n": name,
"l": "root" | "kernel" | "", "v": samples, "c": [children]}), so the
template draws it exactly as it draws perf's. It is encoded here without
recursion: a --native tree can be thousands of frames deep."""
import json

JSON_SLOT = "/** @flamegraph_json **/"
OPTIONS_SLOT = "/** @options_json **/"
TITLE = "<title>Flame Graph</title>"


class Node(object):
    __slots__ = ("name", "libtype", "value", "children")

    def __init__(self, name, libtype):
        self.name = name
        self.libtype = libtype
        self.value = 0
        self.children = {}  # frame id -> Node, in order of first sight


def build(stacks, label, libtype):
    """The call tree of STACKS (each a list of frame ids, root first);
    label(id) and libtype(id) describe a frame."""
    root = Node("all", "root")
    for ids in stacks:
        node = root
        node.value += 1
        for i in ids:
            child = node.children.get(i)
            if child is None:
                child = node.children[i] = Node(label(i), libtype(i))
            child.value += 1
            node = child
    return root


def encode(root):
    """ROOT as JSON text, safe inside an HTML <script> element."""
    out = []
    # Each entry: a node to open, or None to close the innermost open one.
    todo = [root]
    while todo:
        node = todo.pop()
        if node is None:
            out.append("]}")
            continue
        if out and not out[-1].endswith("["):
            out.append(",")
        out.append('{"n":%s,"l":%s,"v":%d,"c":[' % (
            json.dumps(node.name), json.dumps(node.libtype), node.value))
        todo.append(None)
        todo.extend(reversed(list(node.children.values())))
    # "</script>" in a function name must not end the page's script.
    return "".join(out).replace("</", "<\\/")


def page(template_text, root, title, context):
    """The template with the tree, its options and a title filled in."""
    if JSON_SLOT not in template_text or OPTIONS_SLOT not in template_text:
        raise ValueError("not a d3-flame-graph template: no %s or %s" % (JSON_SLOT, OPTIONS_SLOT))
    options = json.dumps({"colorscheme": "blue-green", "context": context}).replace("</", "<\\/")
    title_tag = "<title>%s</title>" % (
        title.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;"))
    return (template_text.replace(TITLE, title_tag, 1)
            .replace(OPTIONS_SLOT, options, 1)
            .replace(JSON_SLOT, encode(root), 1))
