"""Fix-guided counterfactual verification: what every procedure kind shares, the pure decision
from run results to an outcome, and whose harness judges.
"""
