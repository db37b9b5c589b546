def mean(xs):
    """Arithmetic mean.

    >>> mean([1, 2, 3, 4])
    2.5
    >>> mean([])
    0
    >>> mean([2, 2])
    2
    """
    return sum(xs) / len(xs)

if __name__ == "__main__":
    import doctest
    doctest.testmod()
