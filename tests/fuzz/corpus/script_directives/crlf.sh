#SHOAL --mem 16G --time 90s -g 1
nvidia-smi
