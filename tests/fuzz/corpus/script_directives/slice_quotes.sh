#!/usr/bin/env bash
	#SHOAL --slice 1g.10gb --gpu-mem 10GiB	--priority low
#SHOAL -e 'MSG=it'\''s "quoted"' -e PATH=a\ b -n 'notebook \ one'
#SHOAL -t 1-00:00:00 # a comment after the options
jupyter lab --no-browser
