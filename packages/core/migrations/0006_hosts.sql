CREATE TABLE `runtime_host` (
	`id` text PRIMARY KEY NOT NULL,
	`pid` integer NOT NULL,
	`machine` text NOT NULL,
	`time_started` integer NOT NULL,
	`time_seen` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `session_lease` (
	`session_id` text PRIMARY KEY NOT NULL,
	`host_id` text NOT NULL,
	`time_claimed` integer NOT NULL,
	FOREIGN KEY (`session_id`) REFERENCES `session`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `session_lease_host_idx` ON `session_lease` (`host_id`);