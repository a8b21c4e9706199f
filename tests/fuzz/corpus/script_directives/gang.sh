#!/bin/sh
# Pre-training on four nodes.
#SHOAL -N 4 -g 8 --tasks-per-node 8 -c 96
#SHOAL -D /scratch/llm -v datasets:/data -v ckpt:/ckpt -p vision
#SHOAL --priority high --requeue

torchrun --nnodes 4 train.py
#SHOAL --gpus 1
