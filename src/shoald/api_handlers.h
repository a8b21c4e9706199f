/* SPDX-License-Identifier: Apache-2.0 */
/* Every API handler, for the route table in routes.c. Each lives in the
 * api_<resource>.c file of its resource. */
#ifndef SHOAL_SHOALD_API_HANDLERS_H
#define SHOAL_SHOALD_API_HANDLERS_H

#include "shoald/api.h"

struct node;

extern const struct api_route api_routes[];

void api_web_dashboard(struct shoald *d, struct api_req *req);
void api_metrics(struct shoald *d, struct api_req *req);
void api_health(struct shoald *d, struct api_req *req);
void api_whoami(struct shoald *d, struct api_req *req);
/* GET /v1/openapi.json: doc/api/openapi.json, built in as api_openapi_json
 * (api_openapi_json_len bytes, not NUL-terminated). */
void api_openapi(struct shoald *d, struct api_req *req);
extern const unsigned char api_openapi_json[];
extern const size_t api_openapi_json_len;

void api_jobs_submit(struct shoald *d, struct api_req *req);
void api_jobs_list(struct shoald *d, struct api_req *req);
void api_jobs_show(struct shoald *d, struct api_req *req);
void api_jobs_cancel(struct shoald *d, struct api_req *req);
void api_jobs_update(struct shoald *d, struct api_req *req);
void api_jobs_requeue(struct shoald *d, struct api_req *req);
void api_jobs_hold(struct shoald *d, struct api_req *req);
void api_jobs_release(struct shoald *d, struct api_req *req);

void api_jobs_logs(struct shoald *d, struct api_req *req);

void api_history(struct shoald *d, struct api_req *req);

/* api_usage.c: GET /v1/usage */
void api_usage(struct shoald *d, struct api_req *req);

void api_nodes_list(struct shoald *d, struct api_req *req);
void api_nodes_show(struct shoald *d, struct api_req *req);
void api_nodes_drain(struct shoald *d, struct api_req *req);
void api_nodes_resume(struct shoald *d, struct api_req *req);
void api_nodes_delete(struct shoald *d, struct api_req *req);
void api_nodes_rekey(struct shoald *d, struct api_req *req);
void api_join_tokens_list(struct shoald *d, struct api_req *req);
void api_join_tokens_create(struct shoald *d, struct api_req *req);
void api_join_tokens_revoke(struct shoald *d, struct api_req *req);
void api_join_tokens_rotate_default(struct shoald *d, struct api_req *req);

void api_slices_presets(struct shoald *d, struct api_req *req);
void api_slices_apply(struct shoald *d, struct api_req *req);
void api_slices_show(struct shoald *d, struct api_req *req);

void api_agent_register(struct shoald *d, struct api_req *req);
void api_agent_heartbeat(struct shoald *d, struct api_req *req);
void api_agent_work(struct shoald *d, struct api_req *req);
void api_agent_logs(struct shoald *d, struct api_req *req);
void api_agent_step_add(struct shoald *d, struct api_req *req);
void api_agent_step_done(struct shoald *d, struct api_req *req);
void api_agent_step_cancel(struct shoald *d, struct api_req *req);
/* Answer node n's held work poll, if any, with its work (or err). */
void api_agent_answer_poll(struct shoald *d, const struct node *n,
                           const struct sh_error *err);
/* Answer held work polls whose wait is over (all of them when all). */
void api_agent_expire_polls(struct shoald *d, bool all);

/* api_admin.c: POST /v1/admin/backup */
void api_admin_backup(struct shoald *d, struct api_req *req);

/* api_volumes.c */
void api_volumes_list(struct shoald *d, struct api_req *req);
void api_volumes_create(struct shoald *d, struct api_req *req);
void api_volumes_show(struct shoald *d, struct api_req *req);
void api_volumes_delete(struct shoald *d, struct api_req *req);

/* api_partitions.c */
void api_partitions_list(struct shoald *d, struct api_req *req);
void api_partitions_create(struct shoald *d, struct api_req *req);
void api_partitions_show(struct shoald *d, struct api_req *req);
void api_partitions_delete(struct shoald *d, struct api_req *req);
void api_qos_list(struct shoald *d, struct api_req *req);
void api_qos_create(struct shoald *d, struct api_req *req);
void api_qos_show(struct shoald *d, struct api_req *req);
void api_qos_delete(struct shoald *d, struct api_req *req);

/* api_secrets.c */
void api_secrets_list(struct shoald *d, struct api_req *req);
void api_secrets_create(struct shoald *d, struct api_req *req);
void api_secrets_show(struct shoald *d, struct api_req *req);
void api_secrets_delete(struct shoald *d, struct api_req *req);

/* api_tenancy.c: teams, projects, members, quotas, users, tokens, limits */
void api_teams_list(struct shoald *d, struct api_req *req);
void api_teams_create(struct shoald *d, struct api_req *req);
void api_teams_show(struct shoald *d, struct api_req *req);
void api_teams_delete(struct shoald *d, struct api_req *req);
void api_teams_quota_put(struct shoald *d, struct api_req *req);
void api_teams_quota_patch(struct shoald *d, struct api_req *req);
void api_projects_list(struct shoald *d, struct api_req *req);
void api_projects_create(struct shoald *d, struct api_req *req);
void api_projects_show(struct shoald *d, struct api_req *req);
void api_projects_update(struct shoald *d, struct api_req *req);
void api_projects_delete(struct shoald *d, struct api_req *req);
void api_projects_quota_put(struct shoald *d, struct api_req *req);
void api_projects_quota_patch(struct shoald *d, struct api_req *req);
void api_projects_members(struct shoald *d, struct api_req *req);
void api_projects_member_set(struct shoald *d, struct api_req *req);
void api_projects_member_remove(struct shoald *d, struct api_req *req);
void api_users_list(struct shoald *d, struct api_req *req);
void api_users_create(struct shoald *d, struct api_req *req);
void api_users_show(struct shoald *d, struct api_req *req);
void api_users_update(struct shoald *d, struct api_req *req);
void api_users_delete(struct shoald *d, struct api_req *req);
void api_users_tokens_list(struct shoald *d, struct api_req *req);
void api_users_tokens_issue(struct shoald *d, struct api_req *req);
void api_users_tokens_revoke_all(struct shoald *d, struct api_req *req);
void api_users_tokens_revoke(struct shoald *d, struct api_req *req);
void api_users_limits_show(struct shoald *d, struct api_req *req);
void api_users_limits_put(struct shoald *d, struct api_req *req);
void api_users_limits_patch(struct shoald *d, struct api_req *req);

#endif
