#!/i -#!/sh
#-gres=gpu:4
#SBATCH -J tain -J trSBATCHTCHai -t 2-0:00:00 # -J trai -#!/sh
#-gres=gpu:4
#SBATCH -J tain -J trSBATCHai -t 2-0:00:0222222222222222222222220 t- # Jrainrun 
#ST