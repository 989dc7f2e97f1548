/* wgt plot: loss curves of several runs in one PNG, e.g. wgt train against
 * PyTorch for docs/performance.md:
 *   wgt plot loss_both.png wgt=out/sh/log.csv torch=torch_log.csv [--title TEXT]
 * Each CSV is step,loss,train_eval,val_eval,lr (wgt train's log.csv, or
 * bench/train_torch_ref.py --csv). */
#include <stdio.h>
#include <string.h>

#include "train_log.h"
#include "wgt_commands.h"

#define MAX_RUNS 4

int wgt_command_plot(int argc, char **argv)
{
    const char *out = NULL, *title = "loss against step";
    const char *labels[MAX_RUNS];
    train_history runs[MAX_RUNS];
    memset(runs, 0, sizeof(runs));
    int n = 0, rc = 0;
    char msg[700];
    for (int i = 1; i < argc && rc == 0; i++) {
        if (strcmp(argv[i], "--title") == 0 && i + 1 < argc) {
            title = argv[++i];
        } else if (!out) {
            out = argv[i];
        } else {
            char *eq = strchr(argv[i], '=');
            if (!eq || n == MAX_RUNS) {
                fprintf(stderr, "wgt plot: \"%s\": want LABEL=FILE.csv (at most %d runs)\n", argv[i], MAX_RUNS);
                rc = 2;
                break;
            }
            *eq = '\0';
            labels[n] = argv[i];
            if (!train_history_read_csv(&runs[n], eq + 1, msg, sizeof(msg))) {
                fprintf(stderr, "wgt plot: %s\n", msg);
                rc = 1;
            }
            n++;
        }
    }
    if (rc == 0 && (!out || n == 0)) {
        fprintf(stderr, "usage: wgt plot OUT.png LABEL=FILE.csv [LABEL=FILE.csv ...] [--title TEXT]\n");
        rc = 2;
    }
    if (rc == 0 && !train_history_plot_runs(runs, labels, n, out, title)) {
        fprintf(stderr, "wgt plot: cannot write %s\n", out);
        rc = 1;
    }
    if (rc == 0) printf("wgt plot: %d runs drawn into %s\n", n, out);
    for (int i = 0; i < n; i++) train_history_free(&runs[i]);
    return rc;
}
