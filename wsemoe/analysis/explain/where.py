"""Filter expressions over result columns: `mfu > 0.3 and workload.G <= 16`, parsed safely.

The text is parsed as a Python expression and only a small grammar is accepted: column names (dotted
ones too), numbers, quoted text, true/false, comparisons (chains too), `in`/`not in` a list, `and`,
`or`, `not`, parentheses and + − × / on numbers. Nothing is ever evaluated as code; every problem is a
one-line error naming the expression.
"""

from __future__ import annotations

import ast
import difflib
import operator

import numpy as np
import pandas as pd

from wsemoe.errors import ConfigError, excerpt
from wsemoe.sweep import column_check

MAX_TEXT = 2000
LOC = ("--where",)
_CMP = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
        ast.Gt: operator.gt, ast.GtE: operator.ge}
_ARITH = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}
_WORDS = {"true": True, "false": False, "True": True, "False": False}
POINT = "point"   # the row's point index, as `show` prints it: filterable though no stored column holds it


def _numeric(x) -> bool:
    """A number, or an array of numbers (booleans excluded)."""
    if isinstance(x, bool):
        return False
    if isinstance(x, (int, float)):
        return True
    return isinstance(x, np.ndarray) and x.dtype.kind in "iuf"


def _zero(node) -> bool:
    """A literal zero (0, 0.0, -0, +0): every row's quotient would be infinite or NaN, whatever it holds."""
    while isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        node = node.operand
    return isinstance(node, ast.Constant) and not isinstance(node.value, (bool, str)) and node.value == 0


class Where:
    """A parsed filter: `columns` it reads, and `mask(df)` the rows it keeps."""

    def __init__(self, text: str, columns):
        """`columns`: the names a filter may read, or {name: kind} ("number", "text", "bool") to have every
        comparison and sum checked against the kinds of what it compares (`_kind`) before any row is read."""
        if not isinstance(text, str) or not text.strip():
            raise ConfigError("empty filter expression", loc=LOC)
        if len(text) > MAX_TEXT:
            raise ConfigError(f"filter expression longer than {MAX_TEXT} characters", loc=LOC)
        self.text, self.known = text, list(columns)
        self.kinds = dict(columns) if isinstance(columns, dict) else {}
        try:
            self.tree = ast.parse(text.strip(), mode="eval").body
        except SyntaxError as exc:
            raise ConfigError(f"cannot parse '{excerpt(text)}': {exc.msg}", loc=LOC) from None
        except (RecursionError, MemoryError, ValueError):
            raise ConfigError(f"cannot parse '{excerpt(text)}': nested too deeply or malformed", loc=LOC) from None
        self.columns: list[str] = []
        self._check(self.tree, depth=0)
        if self.kinds:
            self._kind(self.tree)

    def _name(self, node) -> str | None:
        """The dotted column name a Name/Attribute chain spells, or None."""
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name):
            return ".".join([node.id, *reversed(parts)])
        return None

    def _check(self, node, depth: int) -> None:
        """Accept only the small grammar; record the columns read."""
        if depth > 50:
            raise ConfigError("filter expression nested too deeply", loc=LOC)
        if isinstance(node, (ast.Name, ast.Attribute)):
            name = self._name(node)
            if name is None:
                raise ConfigError(f"'{excerpt(ast.unparse(node))}' is not a column name", loc=LOC)
            if name in self.known:
                self.columns.append(name)
                return
            if name in _WORDS or name == POINT:
                return
            lower = {k.lower(): k for k in self.known}  # 'MFU' means 'mfu': case first, then spelling
            close = [lower[name.lower()]] if name.lower() in lower else \
                [lower[c] for c in difflib.get_close_matches(name.lower(), list(lower), n=1)]
            hint = f"; did you mean '{close[0]}'?" if close else f"; to compare with text, quote it: '{name}'"
            hint = column_check.missing(name) or hint   # as every other place a user names a column (check_column)
            raise ConfigError(f"unknown column '{excerpt(name)}'{hint}", loc=LOC)
        if isinstance(node, ast.Constant):
            if not isinstance(node.value, (int, float, str, bool)):
                raise ConfigError(f"unsupported value {excerpt(repr(node.value))}", loc=LOC)
            return
        children = {ast.BoolOp: lambda n: (isinstance(n.op, (ast.And, ast.Or)), n.values),
                    ast.UnaryOp: lambda n: (isinstance(n.op, (ast.Not, ast.USub, ast.UAdd)), [n.operand]),
                    ast.Compare: lambda n: (all(type(o) in _CMP or isinstance(o, (ast.In, ast.NotIn)) for o in n.ops),
                                            [n.left, *n.comparators]),
                    ast.BinOp: lambda n: (type(n.op) in _ARITH, [n.left, n.right]),
                    ast.List: lambda n: (True, n.elts), ast.Tuple: lambda n: (True, n.elts)}
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div) and _zero(node.right):
            raise ConfigError(f"division by zero in '{excerpt(ast.unparse(node))}'", loc=LOC)
        rule = children.get(type(node))
        ok, kids = rule(node) if rule else (False, [])
        if not ok:
            raise ConfigError(f"unsupported in a filter: '{excerpt(ast.unparse(node))}' (use columns, numbers, "
                              "'text', comparisons, in [...], and, or, not, + - * /)", loc=LOC)
        for k in kids:
            self._check(k, depth + 1)

    def _kind(self, node):
        """The kind of what `node` gives ("number", "text", "bool", a list of kinds, or None when unknown);
        a comparison or sum of kinds that cannot meet is refused, naming the columns (the one column check:
        `sweep.column_check.check_column` refuses the same mismatches in configs and options)."""
        if isinstance(node, (ast.Name, ast.Attribute)):
            name = self._name(node)
            return self.kinds.get(name) if name in self.known else "number" if name == POINT else "bool"
        if isinstance(node, ast.Constant):
            v = node.value
            return "bool" if isinstance(v, bool) else "text" if isinstance(v, str) else "number"
        if isinstance(node, (ast.List, ast.Tuple)):
            return [self._kind(e) for e in node.elts]
        if isinstance(node, ast.BoolOp):
            for v in node.values:   # 'mfu and mfu > 0' read a number as a condition (or failed inside numpy)
                self._need(v, self._kind(v), "bool", "and/or join conditions (compare it, e.g. mfu > 0)")
            return "bool"
        if isinstance(node, ast.UnaryOp):
            k = self._kind(node.operand)
            if isinstance(node.op, ast.Not):
                self._need(node.operand, k, "bool", "not takes a condition (compare it, e.g. not mfu > 0)")
                return "bool"
            self._need(node.operand, k, "number", "- and + take numbers")
            return "number"
        if isinstance(node, ast.BinOp):
            for side in (node.left, node.right):
                self._need(side, self._kind(side), "number", "+ - * / take numbers")
            return "number"
        if not any(self._reads(n) for n in (node.left, *node.comparators)):   # '1 > 0' keeps all or nothing
            raise ConfigError(f"'{excerpt(ast.unparse(node))}' compares no column", loc=LOC)
        left_node, left = node.left, self._kind(node.left)
        for op, right_node in zip(node.ops, node.comparators):
            right = self._kind(right_node)
            if isinstance(op, (ast.In, ast.NotIn)):
                for k in right if isinstance(right, list) else []:
                    self._meet(left_node, left, k, right_node)
            else:
                self._meet(left_node, left, right, right_node)
            left_node, left = right_node, right
        return "bool"

    def _reads(self, node) -> bool:
        """Whether `node` reads a column or the point index (not only numbers, texts and true/false)."""
        return any(isinstance(n, (ast.Name, ast.Attribute)) and self._name(n) not in _WORDS for n in ast.walk(node))

    def _need(self, node, kind, want: str, why: str) -> None:
        if kind not in (None, want):
            raise ConfigError(f"{why}: '{excerpt(ast.unparse(node))}' holds {kind}", loc=LOC)

    def _meet(self, a_node, a, b, b_node) -> None:
        """Two sides of a comparison must be of one kind (a number never equals a text: always false)."""
        if a is None or b is None or isinstance(a, list) or isinstance(b, list) or a == b:
            return
        raise ConfigError(f"compares '{excerpt(ast.unparse(a_node))}' ({a}) with '{excerpt(ast.unparse(b_node))}' "
                          f"({b}); compare numbers with numbers and text with 'quoted text'", loc=LOC)

    def mask(self, df: pd.DataFrame) -> np.ndarray:
        """Boolean mask of the rows of `df` the expression keeps."""
        try:
            with np.errstate(all="ignore"):
                out = np.asarray(self._eval(self.tree, df))
        except (TypeError, ValueError, ArithmeticError) as exc:  # 'x' > 1, 0/0, ragged lists, ...
            raise ConfigError(f"cannot evaluate '{excerpt(self.text)}': {excerpt(exc, 120)}", loc=LOC) from None
        if out.dtype != bool or out.ndim > 1 or (out.ndim == 1 and len(out) != len(df)):  # 'mfu > 0,' is a tuple
            raise ConfigError(f"'{excerpt(self.text)}' is not a condition (true or false for each point; "
                              "combine conditions with and/or)", loc=LOC)
        return np.broadcast_to(out, (len(df),))

    def _eval(self, node, df):
        if isinstance(node, (ast.Name, ast.Attribute)):
            name = self._name(node)
            if name in self.known:
                col = df[name]
                return col.astype(object).to_numpy() if isinstance(col.dtype, pd.CategoricalDtype) else col.to_numpy()
            return df.index.to_numpy() if name == POINT else _WORDS[name]   # frames are indexed by point
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.BoolOp):
            vals = np.broadcast_arrays(*(np.asarray(self._eval(v, df), dtype=bool) for v in node.values))  # 'and true'
            return np.logical_and.reduce(vals) if isinstance(node.op, ast.And) else np.logical_or.reduce(vals)
        if isinstance(node, ast.UnaryOp):
            v = self._eval(node.operand, df)
            return np.logical_not(v) if isinstance(node.op, ast.Not) else (-v if isinstance(node.op, ast.USub) else +v)
        if isinstance(node, ast.BinOp):
            left, right = self._eval(node.left, df), self._eval(node.right, df)
            if not (_numeric(left) and _numeric(right)):  # 'x' * 10**9 would build a gigabyte of text
                raise TypeError("+ - * / take numbers")
            return _ARITH[type(node.op)](left, right)
        if isinstance(node, (ast.List, ast.Tuple)):
            return [self._eval(e, df) for e in node.elts]
        return self._compare(node, df)

    def _compare(self, node: ast.Compare, df):
        left, out = self._eval(node.left, df), True
        for op, right_node in zip(node.ops, node.comparators):
            right = self._eval(right_node, df)
            if isinstance(op, (ast.In, ast.NotIn)):
                if not isinstance(right, list):
                    raise TypeError("'in' needs a list, e.g. mapping.strategy in ['er', 'block']")
                hit = pd.Series(np.asarray(left, dtype=object).ravel()).isin(right).to_numpy()
                res = hit if isinstance(op, ast.In) else ~hit
            else:
                res = _CMP[type(op)](left, right)
            out = np.logical_and(out, np.asarray(res, dtype=bool))
            left = right
        return out
