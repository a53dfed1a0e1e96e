CREATE TABLE `event` (
	`id` text PRIMARY KEY NOT NULL,
	`aggregate_id` text NOT NULL,
	`seq` integer NOT NULL,
	`type` text NOT NULL,
	`version` integer NOT NULL,
	`data` text NOT NULL,
	`time_created` integer NOT NULL,
	FOREIGN KEY (`aggregate_id`) REFERENCES `event_sequence`(`aggregate_id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `event_aggregate_seq_unique` ON `event` (`aggregate_id`,`seq`);--> statement-breakpoint
CREATE TABLE `event_sequence` (
	`aggregate_id` text PRIMARY KEY NOT NULL,
	`seq` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `session` (
	`id` text PRIMARY KEY NOT NULL,
	`project_id` text NOT NULL,
	`directory` text NOT NULL,
	`workspace_id` text,
	`subpath` text,
	`title` text NOT NULL,
	`time_created` integer NOT NULL,
	`time_updated` integer NOT NULL,
	`info` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `session_time_created_id_idx` ON `session` (`time_created`,`id`);--> statement-breakpoint
CREATE INDEX `session_directory_idx` ON `session` (`directory`);--> statement-breakpoint
CREATE INDEX `session_project_id_idx` ON `session` (`project_id`);