"""A greeting, so the demo agent has something to read."""


def greet(name: str) -> str:
    return f"Hello, {name}!"


if __name__ == "__main__":
    print(greet("Orion"))
