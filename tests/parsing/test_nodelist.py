import pytest

from goodput_agent.parsing.nodelist import expand_nodelist, split_top_level


@pytest.mark.parametrize(("text", "expected"), [
    ("gpu-[01-04,07]", ["gpu-01", "gpu-02", "gpu-03", "gpu-04", "gpu-07"]),
    ("c[002,004,008-010]", ["c002", "c004", "c008", "c009", "c010"]),
    ("node[1-2],gpu-[3-4]", ["node1", "node2", "gpu-3", "gpu-4"]),
    ("n[9-11]", ["n9", "n10", "n11"]),  # no padding: the width grows
    ("n[09-11]", ["n09", "n10", "n11"]),  # padding from the range's start
    ("n[0-2]", ["n0", "n1", "n2"]),
    ("rack[1-2]-n[01-02]", ["rack1-n01", "rack1-n02", "rack2-n01", "rack2-n02"]),
    ("d[001-002],f[001-002,006]", ["d001", "d002", "f001", "f002", "f006"]),
    ("cn1", ["cn1"]),
    ("cn1,cn2", ["cn1", "cn2"]),
    ("viz3d-1", ["viz3d-1"]),
    ("ip-10-0-0-1.ec2.internal", ["ip-10-0-0-1.ec2.internal"]),
    ("cn[1-2],cn2", ["cn1", "cn2"]),  # duplicates dropped, order kept
    (" gpu-[1-2] ", ["gpu-1", "gpu-2"]),
])
def test_expand(text: str, expected: list[str]) -> None:
    assert expand_nodelist(text) == expected


@pytest.mark.parametrize("text", ["", "(null)", "None assigned", "(Resources)", None, "N/A"])
def test_no_nodes(text: str | None) -> None:
    assert expand_nodelist(text) == []


@pytest.mark.parametrize("text", ["gpu-[01-", "gpu-[a-c]", "n[5-3]", "x]y["])
def test_garbage_is_kept_as_written_not_raised(text: str) -> None:
    assert expand_nodelist(text) == [text.strip()]


def test_range_over_the_limit_is_not_expanded() -> None:
    assert expand_nodelist("n[1-99999999]", limit=1000) == ["n[1-99999999]"]
    hosts = expand_nodelist("a[1-600],b[1-600]", limit=1000)
    assert len(hosts) == 601 and hosts[-1] == "b[1-600]"  # the item over the budget stays whole


def test_split_top_level_ignores_commas_inside_brackets() -> None:
    assert split_top_level("a[1,2],b,c[3-4,6]") == ["a[1,2]", "b", "c[3-4,6]"]
