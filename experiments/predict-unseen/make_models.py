#!/usr/bin/env python3
"""Writes the predict-unseen study's GPT model files: gpt-w{W}-l{L}.toml, a GPT-style decoder chain
the CPU engine trains (learned positions up to 128, biases, GELU MLPs of width 4W, W/64 heads,
untied head, a 256-token vocabulary), for every width and depth the study varies."""
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent


def model(width, depth, positions=128, vocab=256):
    heads = max(1, width // 64)
    out = [f"# gpt-w{width}-l{depth}: written by make_models.py (predict-unseen study).",
           f'name = "gpt-w{width}-l{depth}"', "",
           "[[layer]]", 'name = "embedding"', 'type = "embedding"', f"vocab = {vocab}",
           f"hidden = {width}", f"positions = {positions}", ""]
    for b in range(depth):
        out += ["[[layer]]", f'name = "block{b}.attn"', 'type = "attention"', f"hidden = {width}",
                f"heads = {heads}", "bias = true", "",
                "[[layer]]", f'name = "block{b}.mlp"', 'type = "mlp"', f"hidden = {width}",
                f"ffn_hidden = {4 * width}", "bias = true", ""]
    out += ["[[layer]]", 'name = "final_norm"', 'type = "norm"', f"hidden = {width}",
            "bias = true", "",
            "[[layer]]", 'name = "head"', 'type = "head"', f"hidden = {width}", f"vocab = {vocab}",
            "", "[[layer]]", 'name = "loss"', 'type = "loss"', f"vocab = {vocab}", ""]
    return "\n".join(out)


if __name__ == "__main__":
    for width, depth in [(128, 8), (256, 8), (512, 8), (256, 4), (256, 12), (256, 16)]:
        (HERE / f"gpt-w{width}-l{depth}.toml").write_text(model(width, depth))
    sys.exit(0)
