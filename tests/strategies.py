"""Hypothesis strategies shared by several test modules."""

from __future__ import annotations

from hypothesis import strategies as st


def nested_json(leaves: st.SearchStrategy) -> st.SearchStrategy:
    """Values built of ``leaves`` in lists and string-keyed dicts, a few levels deep."""
    return st.recursive(
        leaves,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
        max_leaves=20,
    )


#: the arguments of a map transform: a world point, a scale and a rotation
map_points = {
    "x": st.floats(-1e4, 1e4),
    "y": st.floats(-1e4, 1e4),
    "mpp": st.floats(0.05, 20),
    "rot": st.floats(-360, 360),
}
