"""The hello-world module the golden python image is checked with."""


def greet(name: str) -> str:
    return f"Hello, {name}!"


if __name__ == "__main__":
    print(greet("Python"))
