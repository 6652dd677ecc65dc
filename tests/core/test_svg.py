import math
import random
import xml.etree.ElementTree as ET

import pytest

from goodput_agent.core.svg import Scale, Svg, axis, clean, legend, nice_ticks, strip_controls

NS = "{http://www.w3.org/2000/svg}"
HOSTILE = '</svg><script>alert("x")</script>&amp; \x1b]0;pwned\x07\x00\x9b31m'


def parse(svg: Svg) -> ET.Element:
    return ET.fromstring(svg.render().encode("utf-8"))


def test_hostile_text_stays_character_data_everywhere():
    svg = Svg(200, 100)
    svg.text(10, 10, HOSTILE)
    svg.rect(0, 0, 5, 5, "#fff", title=HOSTILE)
    with svg.group(HOSTILE):
        svg.rect(1, 1, 2, 2, "#000")
    root = parse(svg)
    assert root.tag == f"{NS}svg"
    assert not list(root.iter(f"{NS}script"))
    expected = strip_controls(HOSTILE)
    assert "\x1b" not in expected and "\x9b" not in expected and "\x00" not in expected
    assert root.find(f"{NS}text").text == expected
    assert root.find(f".//{NS}title").text == expected
    assert root.find(f"{NS}g").get("aria-label") == expected


def test_clean_cuts_long_names_before_escaping():
    out = clean("<" * 500, limit=10)
    assert out == "&lt;" * 9 + "…"


@pytest.mark.parametrize("seed", range(20))
def test_nice_ticks_are_round_and_cover_the_range(seed):
    rng = random.Random(seed)
    lo = rng.uniform(-1000, 1000)
    hi = lo + 10 ** rng.uniform(-3, 6)
    ticks = nice_ticks(lo, hi, 8)
    assert 3 <= len(ticks) <= 17
    step = ticks[1] - ticks[0]
    mantissa = step / 10 ** math.floor(math.log10(step))
    assert min(abs(mantissa - m) for m in (1, 2, 5, 10)) < 1e-6
    assert all(lo - 1e-9 * abs(hi) <= t <= hi + 1e-9 * abs(hi) for t in ticks)
    assert ticks[0] - lo < step + 1e-9 and hi - ticks[-1] < step + 1e-9


def test_scale_and_axis_put_ticks_between_the_ends():
    scale = Scale(0.0, 80.0, 100.0, 900.0)
    assert (scale(0), scale(80), scale(40)) == (100, 900, 500)
    assert scale.per_pixel == pytest.approx(0.1)
    svg = Svg(1000, 100)
    axis(svg, scale, 50, "ms")
    labels = [t.text for t in parse(svg).iter(f"{NS}text")]
    assert labels[:-1] == ["0", "10", "20", "30", "40", "50", "60", "70", "80"]
    assert labels[-1] == "ms"


def test_legend_wraps_to_its_width():
    items = [(f"item {i}", "#123456") for i in range(10)]
    wide = legend(Svg(2000, 100), 0, 0, items, 2000)
    narrow = legend(Svg(200, 100), 0, 0, items, 200)
    assert wide < narrow
