# DualPipe README bubbles (closed forms, F&B = F + B) against pipette's evaluated schedules.
# Inputs: data (columns method, p, m, formula, pipette, exact: 1 if equal), out (PNG).
set terminal pngcairo size 1000,700 font "Sans,11"
set output out
set termoption noenhanced
set title "DualPipe README: bubble per device, closed form against pipette\n(1f1b, zb-h1, dualpipe, dualpipe-v; p in {2,4,6,8}, m in {2p,4p}; four cost sets)"
set xlabel "README closed form (time units)"
set ylabel "pipette: makespan - compute per device"
set grid
set key left top
set xrange [-1:*]
set yrange [-1:*]
plot x with lines lc rgb "#000000" dt 2 title "y = x", \
     data using (strcol(1) eq "1F1B" ? $4 : NaN):5 with points pt 7 ps 1.4 lc rgb "#0072B2" title "1F1B (PP-1)(F+B)", \
     data using (strcol(1) eq "ZB1P" ? $4 : NaN):5 with points pt 5 ps 1.2 lc rgb "#E69F00" title "ZB1P (PP-1)(F+B-2W)", \
     data using (strcol(1) eq "DualPipe" ? $4 : NaN):5 with points pt 9 ps 1.6 lc rgb "#009E73" title "DualPipe (PP/2-1)(F&B+B-3W)", \
     data using (strcol(1) eq "DualPipeV" ? $4 : NaN):5 with points pt 13 ps 1.4 lc rgb "#D55E00" title "DualPipeV, PP = 2p", \
     data using ($6 == 0 ? $4 : NaN):5 with points pt 6 ps 2.6 lw 2 lc rgb "#CC79A7" title "form an estimate: F=1, I=2, W=1 (B=3)"
