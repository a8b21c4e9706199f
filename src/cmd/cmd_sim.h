/* SPDX-License-Identifier: Apache-2.0 */
/* `shoal sim`: replay a job trace against a cluster shape with the real
 * scheduling engine in simulated time and report JCT, queueing delay,
 * utilization and fairness. Needs no controller: it links the engine. */
#ifndef SHOAL_CMD_CMD_SIM_H
#define SHOAL_CMD_CMD_SIM_H

/* argv[0] is "sim". Prints the report on stdout; errors as
 * "shoal: <message>" on stderr. Returns the exit status (0, 1 on errors,
 * 2 on usage errors). */
int cmd_sim(int argc, char **argv);

#endif
