"""The interval the bench scripts report: a mean over rounds with a two-sided 95% Student-t
interval (rounds are few, so the normal 1.96 would be too narrow)."""
import math
import statistics

# Two-sided 95% quantiles of Student's t, by degrees of freedom; 1.96 beyond the table.
T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228}


def mean_with_interval(values):
    """(mean, low, high); low and high are None for fewer than two values."""
    centre = statistics.mean(values)
    if len(values) < 2:
        return centre, None, None
    half = T95.get(len(values) - 1, 1.96) * statistics.stdev(values) / math.sqrt(len(values))
    return centre, centre - half, centre + half
