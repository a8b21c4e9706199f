#SHOAL --gpus two
#SHOAL "unbalanced
