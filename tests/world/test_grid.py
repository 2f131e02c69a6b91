import pytest

from urban_gym.world.grid import GridOverlay


def test_cells_count_from_the_north_west_corner():
    g = GridOverlay((0.0, 0.0, 500.0, 500.0), 5, 5)
    assert g.cell_of(10, 490) == (0, 0)  # north-west
    assert g.cell_of(490, 10) == (4, 4)  # south-east
    assert g.label_of(250, 250) == "x:2 y:2"
    assert g.cell_of(500, 0) == (4, 4)  # edges belong to the last cell
    assert g.cell_bounds(1, 0) == (100.0, 400.0, 200.0, 500.0)
    assert g.cell_center(0, 4) == (50.0, 50.0)
    assert len(g.labels()) == 25 and g.labels()[0] == "x:0 y:0"


def test_parse_answers():
    g = GridOverlay((0, 0, 1, 1))
    assert g.parse("I think it is x:3 y:1.") == (3, 1)
    assert g.parse("x=0, y=4") == (0, 4)
    assert g.parse("x:5 y:1") is None
    assert g.parse("north-east") is None


def test_bad_grid():
    with pytest.raises(ValueError, match="bounds"):
        GridOverlay((0, 0, 0, 1))
    with pytest.raises(ValueError, match="outside"):
        GridOverlay((0, 0, 1, 1)).cell_of(2, 0)
