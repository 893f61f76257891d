"""A vocabulary-parallel softmax and cross-entropy, checked against torch on the gathered logits.

    torchrun --nproc-per-node 2 -m fastsoftmax.distributed.example

Uses NCCL with one GPU per rank when there are enough GPUs, gloo on the CPU otherwise.
"""

import os

import torch
import torch.distributed as dist
import torch.nn.functional as F

import fastsoftmax.distributed as fd


def main() -> None:
    use_cuda = torch.cuda.device_count() >= int(os.environ.get("WORLD_SIZE", "1"))
    if use_cuda:
        os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    dist.init_process_group("nccl" if use_cuda else "gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    device = torch.device("cuda") if use_cuda else torch.device("cpu")

    # Every rank makes the same full logits (same seed) and keeps its slice of the vocabulary;
    # in a real model each rank's output projection produces only its slice.
    rows, vocab = 8, 50257
    torch.manual_seed(0)
    full = torch.randn(rows, vocab) * 3
    target = torch.randint(0, vocab, (rows,))
    bounds = [vocab * r // world for r in range(world + 1)]  # uneven slices are fine
    logits = full[:, bounds[rank] : bounds[rank + 1]].to(device).requires_grad_()

    probabilities = fd.softmax(logits, dim=-1)  # this rank's slice of the full softmax
    loss = fd.cross_entropy(logits, target.to(device), label_smoothing=0.1)
    loss.backward()  # logits.grad: this rank's slice of the gradient, no logits exchanged

    decoded = ""
    if use_cuda:
        # Decoding, a few rows a step: collective="peer" (ranks of one host) is one kernel launch a
        # call, the per-row statistics written straight into the other GPUs' memory.
        step = fd.log_softmax(logits.detach()[:2], collective="peer", check=False)
        expected = torch.log_softmax(full[:2], -1)[:, bounds[rank] : bounds[rank + 1]]
        decoded = f", max |decode log-softmax error| {(step.cpu() - expected).abs().max().item():.1e}"

    reference = full.clone().requires_grad_()
    reference_loss = F.cross_entropy(reference, target, label_smoothing=0.1)
    reference_loss.backward()
    own = slice(bounds[rank], bounds[rank + 1])
    softmax_error = (probabilities.cpu() - torch.softmax(full, -1)[:, own]).abs().max().item()
    grad_error = (logits.grad.cpu() - reference.grad[:, own]).abs().max().item()
    print(
        f"rank {rank}/{world}: columns {bounds[rank]}..{bounds[rank + 1] - 1}, loss {loss.item():.6f} "
        f"(torch {reference_loss.item():.6f}), max |softmax error| {softmax_error:.1e}, "
        f"max |grad error| {grad_error:.1e}{decoded}"
    )
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
