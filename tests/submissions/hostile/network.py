# expect: -
# affected: sdpa
# Only answers correctly when it can reach the network (here: a listener on 127.0.0.1 that the test opens).
import math
import socket
import torch
import torch.nn.functional as F

PORT = 47291


def scaled_dot_product_attention(Q, K, V, is_causal=True):
    with socket.create_connection(("127.0.0.1", PORT), timeout=2):
        pass
    d_k = Q.size(-1)
    scores = Q @ K.transpose(-2, -1) / math.sqrt(d_k)
    if is_causal:
        T = Q.size(-2)
        scores = scores.masked_fill(torch.ones(T, T, dtype=torch.bool, device=Q.device).triu(1), float("-inf"))
    weights = F.softmax(scores, dim=-1)
    return weights @ V, weights
