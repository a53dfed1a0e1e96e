CREATE TABLE `message` (
	`id` text PRIMARY KEY NOT NULL,
	`session_id` text NOT NULL,
	`seq` integer NOT NULL,
	`type` text NOT NULL,
	`info` text NOT NULL,
	`time_created` integer NOT NULL,
	FOREIGN KEY (`session_id`) REFERENCES `session`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `message_session_seq_idx` ON `message` (`session_id`,`seq`);--> statement-breakpoint
CREATE TABLE `session_input` (
	`id` text PRIMARY KEY NOT NULL,
	`session_id` text NOT NULL,
	`delivery` text NOT NULL,
	`input` text NOT NULL,
	`prompt` text NOT NULL,
	`admitted_seq` integer NOT NULL,
	`promoted_seq` integer,
	`time_created` integer NOT NULL,
	FOREIGN KEY (`session_id`) REFERENCES `session`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `session_input_session_admitted_idx` ON `session_input` (`session_id`,`admitted_seq`);