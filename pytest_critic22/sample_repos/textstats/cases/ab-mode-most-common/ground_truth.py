from textstats import mode


def test_hidden_ties_go_to_the_smallest_value_in_any_order():
    assert mode([3, 3, 1, 1]) == 1
    assert mode([5, 2, 5, 2]) == 2
