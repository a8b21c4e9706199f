/* SPDX-License-Identifier: Apache-2.0 */
/* shoal-sim: `shoal sim` as a program of its own, so the simulator runs
 * without the CLI dispatcher: `shoal-sim --cluster ... --trace ...`. */
#include <stdio.h>

#include "cmd/cmd_sim.h"

int main(int argc, char **argv)
{
    char name[] = "sim";
    argv[0] = name;
    return cmd_sim(argc, argv);
}
