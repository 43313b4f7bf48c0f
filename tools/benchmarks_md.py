"""BENCHMARKS.md's sections that a tool other than scripts/bench.sh writes: each lies between
`<!-- NAME: begin -->` and `<!-- NAME: end -->` markers (bench/report.py keeps them when it
rewrites the file)."""
import os


def markers(name):
    """The begin and end markers of section `name`."""
    return "<!-- %s: begin -->" % name, "<!-- %s: end -->" % name


def put_section(path, name, section):
    """Replaces the text between section `name`'s markers in `path` with `section` (or appends the
    marked section), writing the file atomically."""
    begin, end = markers(name)
    text = open(path).read() if os.path.exists(path) else ""
    block = "%s\n%s\n%s\n" % (begin, section.rstrip("\n"), end)
    if begin in text and end in text:
        before = text[:text.index(begin)]
        after = text[text.index(end) + len(end):].lstrip("\n")
        text = before + block + (("\n" + after) if after else "")
    else:
        text = text.rstrip("\n") + "\n\n" + block
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)
