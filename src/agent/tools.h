/* SPDX-License-Identifier: Apache-2.0 */
/* The programs root runs for a job (crun, skopeo, umoci), pinned before
 * the job's volumes are mounted. The shim mounts a job's volumes in a
 * mount namespace of its own and then still runs these tools as root in
 * it: looked up there, a volume mounted over a folder of PATH (or one
 * made for a mount path) would supply them. tools_pin finds each on the
 * agent's PATH in the node's namespace and keeps a descriptor of the
 * file; tools_exec runs that file, whatever the path names by then. */
#ifndef SHOAL_AGENT_TOOLS_H
#define SHOAL_AGENT_TOOLS_H

/* Root's tool lookups when the agent has no PATH. */
#define TOOLS_SYSTEM_PATH                                                      \
    "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

/* Find each tool on path (NULL: the agent's PATH, or TOOLS_SYSTEM_PATH
 * without one; empty and relative entries are skipped) and keep a
 * descriptor (close-on-exec) of the file found; a tool not found is not
 * run at all afterwards. Called again, the pins are taken anew. */
void tools_pin(const char *path);

/* Give the pins back: tools run through PATH again (the agent). */
void tools_unpin(void);

/* The descriptor pinned for tool name, or -1 (not pinned, not found): a
 * child that closes its descriptors before it runs the tool keeps it. */
int tools_fd(const char *name);

/* Run argv[0] (a tool's name) with envp (NULL: this process's): once
 * pinned, the file pinned for that name (ENOENT for another name or a
 * tool not found), else looked up on PATH as execvp does. Returns only on
 * failure, errno set. */
void tools_exec(char *const argv[], char *const envp[]);

#endif
