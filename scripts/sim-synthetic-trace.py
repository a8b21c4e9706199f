#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A synthetic overloaded trace for `shoal sim` (the shoal CSV contract),
for replays that mix checkpointable and other jobs (doc/design/sim.md,
"Checkpointable jobs in the default policy: when it helps, when it hurts").

Jobs of 1, 2, 4 and 8 GPUs (and 16-GPU gangs of 2 nodes), run times from
minutes to days (log-uniform, up to --max-duration), spread over PROJECTS projects, arriving as
a Poisson stream at LOAD times what GPUS GPUs can run. Deterministic for
a given seed.

    scripts/sim-synthetic-trace.py [--jobs 2000] [--gpus 48] [--load 1.5]
        [--projects 6] [--max-duration 259200] [--seed 1] > trace.csv
"""
import argparse
import math
import random


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=2000)
    ap.add_argument("--gpus", type=int, default=48,
                    help="the cluster's GPUs (for the arrival rate)")
    ap.add_argument("--load", type=float, default=1.5,
                    help="offered GPU time over what the GPUs can run")
    ap.add_argument("--projects", type=int, default=6)
    ap.add_argument("--max-duration", type=int, default=3 * 86400,
                    help="longest run time, seconds (shortest: 2 min)")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rnd = random.Random(a.seed)
    sizes = [(1, 0.45), (2, 0.2), (4, 0.15), (8, 0.15), (16, 0.05)]
    jobs = []
    for i in range(a.jobs):
        r, gpus = rnd.random(), 1
        for g, p in sizes:
            if r < p:
                gpus = g
                break
            r -= p
        # 2 min .. the longest (3 days), log-uniform: a long tail.
        dur = int(math.exp(rnd.uniform(math.log(120),
                                       math.log(a.max_duration))))
        jobs.append((gpus, dur, "p%d" % rnd.randrange(a.projects)))
    demand = sum(g * d for g, d, _ in jobs)
    # Mean gap so that demand over the arrival span is LOAD x capacity.
    gap = demand / (a.load * a.gpus) / a.jobs
    print("id,submit,duration,gpus,nodes,user,project")
    t = 0.0
    for i, (gpus, dur, project) in enumerate(jobs, 1):
        t += rnd.expovariate(1.0 / gap)
        nodes = 2 if gpus == 16 else 1
        print("%d,%d,%d,%d,%d,u%s,%s" % (i, int(t), dur, gpus, nodes,
                                         project[1:], project))


if __name__ == "__main__":
    main()
