#!/bin/bash
#SBATCH --gres=gpu:2
#SBATCH -N 1 --time=1:30:00
#SBATCH -J trainrun --mem=16G
#SBATCH --ntasks-per-node=2 -c 4
echo hello
