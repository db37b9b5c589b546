from greet import greet


def test_greet() -> None:
    assert greet("Python") == "Hello, Python!"
