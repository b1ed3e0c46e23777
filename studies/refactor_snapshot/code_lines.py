"""Net code lines of Python files: the lines that hold code, blank lines,
comments and docstrings aside (issue 51: "net package code lines must go
down").

    python -P studies/refactor_snapshot/code_lines.py FILE_OR_DIR ...

prints each file's net code lines and total lines, and the sums. A line
counts where a token other than a comment, a newline or an indentation
covers it (a string over several lines covers each), unless it belongs to
a docstring (the first statement of a module, class or function, when a
string).
"""

import ast
import io
import pathlib
import sys
import tokenize

_SKIPPED = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT,
            tokenize.DEDENT, tokenize.ENDMARKER, tokenize.ENCODING}


def docstring_lines(tree):
    """The line numbers of the docstrings of `tree`."""
    lines = set()
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef,
                                 ast.AsyncFunctionDef)):
            continue
        body = node.body
        if (body and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)):
            lines.update(range(body[0].lineno, body[0].end_lineno + 1))
    return lines


def code_lines(source):
    """The net code lines of `source` (a str)."""
    code = set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type not in _SKIPPED:
            code.update(range(token.start[0], token.end[0] + 1))
    return len(code - docstring_lines(ast.parse(source)))


def main(paths):
    files = []
    for path in map(pathlib.Path, paths):
        files += sorted(path.rglob("*.py")) if path.is_dir() else [path]
    net = total = 0
    for file in files:
        source = file.read_text()
        count, lines = code_lines(source), len(source.splitlines())
        net, total = net + count, total + lines
        print(f"{count:6d} {lines:6d}  {file}")
    print(f"{net:6d} {total:6d}  total (net code lines, lines)")


if __name__ == "__main__":
    main(sys.argv[1:])
