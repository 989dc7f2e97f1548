/* Subcommands of the wgt tool; each returns the process exit code. */
#ifndef WGT_COMMANDS_H
#define WGT_COMMANDS_H

int wgt_command_devices(int argc, char **argv);
int wgt_command_demo(int argc, char **argv);
int wgt_command_bench(int argc, char **argv);
int wgt_command_tune(int argc, char **argv);
int wgt_command_train(int argc, char **argv);  /* train.c */
int wgt_command_sample(int argc, char **argv); /* sample.c */
int wgt_command_plot(int argc, char **argv);   /* plot.c */
int wgt_command_digits(int argc, char **argv); /* digits.c */
int wgt_command_generate(int argc, char **argv); /* generate.c */

#endif
