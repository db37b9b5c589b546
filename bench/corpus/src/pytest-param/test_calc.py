import pytest

def add(a, b):
    return a + b if a < 5 else a - b

@pytest.mark.parametrize("a,b,expected", [(1, 2, 3), (2, 2, 4), (6, 1, 7), (7, 3, 10), (3, 3, 6)])
def test_add(a, b, expected):
    assert add(a, b) == expected

@pytest.mark.parametrize("payload", [{"id": 1, "tags": ["a", "b"]}, {"id": 2, "tags": []}], ids=["with-tags", "empty tags"])
def test_payload(payload):
    assert payload["tags"] == ["a", "b"]

def test_many():
    for i in range(30):
        pass
    assert [1, 2, 3, 4] == [1, 2, 4, 4]
