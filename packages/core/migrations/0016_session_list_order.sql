-- List pages walk creation order, (time_created, then id descending), forwards or backwards. The old
-- indexes held (time_created, id) and the filters alone, so a page sorted every row its filter matched.
DROP INDEX `session_time_created_id_idx`;--> statement-breakpoint
DROP INDEX `session_directory_idx`;--> statement-breakpoint
DROP INDEX `session_project_id_idx`;--> statement-breakpoint
CREATE INDEX `session_list_idx` ON `session` (`time_created`,"id" DESC);--> statement-breakpoint
CREATE INDEX `session_directory_list_idx` ON `session` (`directory`,`time_created`,"id" DESC);--> statement-breakpoint
CREATE INDEX `session_project_list_idx` ON `session` (`project_id`,`time_created`,"id" DESC);