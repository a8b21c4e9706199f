#!/bin/bash
#SHOAL --gpus 2 --time 2h30m
#SHOAL -m 64G --gpu-type H100-80GB
#SHOAL --name "resnet 50" -e WANDB_MODE=offline
python train.py --epochs 90
