import logging, pytest
LEVELS = ["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]
@pytest.mark.parametrize("name", LEVELS)
def test_level_roundtrip(name):
    assert logging.getLevelName(logging.getLevelName(name)) == name
@pytest.mark.parametrize("exc", [ValueError, TypeError, KeyError])
def test_raises(exc):
    with pytest.raises(exc):
        raise exc("x")
