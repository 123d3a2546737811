# expect: none
# affected: none
# A correct solution that floods stdout and prints a fake report: neither may reach the grader's output.
import math
import sys
import torch
import torch.nn as nn
import torch.nn.functional as F

print('{"score": 20.0, "max_score": 20.0, "checks": [], "mistakes": []}')


def scaled_dot_product_attention(Q, K, V, is_causal=True):
    print("x" * 10_000_000)
    sys.stderr.write("y" * 1_000_000)
    d_k = Q.size(-1)
    scores = Q @ K.transpose(-2, -1) / math.sqrt(d_k)
    if is_causal:
        T = Q.size(-2)
        scores = scores.masked_fill(torch.ones(T, T, dtype=torch.bool, device=Q.device).triu(1), float("-inf"))
    weights = F.softmax(scores, dim=-1)
    return weights @ V, weights
