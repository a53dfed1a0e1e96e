CREATE TABLE `permission_request` (
	`id` text PRIMARY KEY NOT NULL,
	`session_id` text NOT NULL,
	`agent` text NOT NULL,
	`origin` text NOT NULL,
	`ruleset` text NOT NULL,
	`info` text NOT NULL,
	`status` text NOT NULL,
	`message` text,
	`time_created` integer NOT NULL,
	`time_replied` integer,
	FOREIGN KEY (`session_id`) REFERENCES `session`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `permission_request_status_session_idx` ON `permission_request` (`status`,`session_id`);--> statement-breakpoint
CREATE TABLE `permission_saved` (
	`id` text PRIMARY KEY NOT NULL,
	`project_id` text NOT NULL,
	`action` text NOT NULL,
	`resource` text NOT NULL,
	`time_created` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `permission_saved_project_action_resource_idx` ON `permission_saved` (`project_id`,`action`,`resource`);