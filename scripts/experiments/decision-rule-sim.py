#!/usr/bin/env python3
"""The decision rule (src/tune/decision.rs, src/tune/stats.rs) re-implemented independently, to
check the Rust simulation's figures and to measure the rule it replaced (docs/benchmarks.md,
"The decision rule, seeded simulation").

  old: Welch's interval for each pair; with a single repeat on a side, the margin against the
       5% objective.noise threshold; a winner whenever every margin separates.
  new: the coefficient of variation pooled over every configuration with >= 2 repeats; the
       margin's interval delta +- t(pooled df) x max(pooled se, the pair's own se); with no
       noise measured, never a winner (a leader).

Four configurations at one load point, Gaussian noise; 4,000 trials per row; ~5 s.
Usage: python3 scripts/experiments/decision-rule-sim.py
"""
import random, math
T=[(1,12.706),(2,4.303),(3,3.182),(4,2.776),(5,2.571),(6,2.447),(7,2.365),(8,2.306),(9,2.262),(10,2.228),(11,2.201),(12,2.179),(13,2.160),(14,2.145),(15,2.131),(16,2.120),(17,2.110),(18,2.101),(19,2.093),(20,2.086),(22,2.074),(24,2.064),(26,2.056),(28,2.048),(30,2.042),(40,2.021),(60,2.000),(120,1.980)]
def t975(df):
    if df>=120: return 1.96+0.02*120/df
    if df<=1: return 12.706
    for (d0,t0),(d1,t1) in zip(T,T[1:]):
        if df<=d1:
            x=(1/df-1/d0)/(1/d1-1/d0); return t0+(t1-t0)*x
def msd(v):
    n=len(v); m=sum(v)/n
    return m,(math.sqrt(sum((x-m)**2 for x in v)/(n-1)) if n>1 else None)
def decide(groups, rule):
    est={k:msd(v)+(len(v),) for k,v in groups.items()}
    order=sorted(est, key=lambda k:-est[k][0])
    L=order[0]; mL,sL,nL=est[L]
    if rule=='new':
        w=df=0
        for k,(m,s,n) in est.items():
            if n>=2: w+=(n-1)*(s/m)**2; df+=n-1
        pool=(math.sqrt(w/df),df) if df else None
    tied=False
    for O in order[1:]:
        mO,sO,nO=est[O]; d=mL-mO
        if rule=='old':
            if sL is not None and sO is not None:
                a=sL*sL/nL; b=sO*sO/nO
                dfw=(a+b)**2/(a*a/(nL-1)+b*b/(nO-1)); sep=d-t975(dfw)*math.sqrt(a+b)>0
            else: sep=d/mO>0.05
        else:
            if pool is None: sep=d/mO>0.05
            else:
                cv,df=pool; ps=cv*math.sqrt(mL*mL/nL+mO*mO/nO)
                os_=math.sqrt(sL*sL/nL+sO*sO/nO) if (sL is not None and sO is not None) else 0
                sep=d-t975(df)*max(ps,os_)>0
        if not sep: tied=True
    if tied: return 'tie',L
    if rule=='new' and pool is None: return 'leader',L
    return 'winner',L
def run(rule,cv,reps,trials,rng):
    fw=named=ft=wrong=leads=0
    for _ in range(trials):
        g={k:[1000*(1+cv*rng.gauss(0,1)) for _ in range(reps)] for k in 'abcd'}
        if decide(g,rule)[0]=='winner': fw+=1
        g={k:[t*(1+cv*rng.gauss(0,1)) for _ in range(reps)] for k,t in [('a',1000),('best',1100),('c',1000),('d',1000)]}
        o,L=decide(g,rule)
        if o=='winner' and L=='best': named+=1
        if o!='winner': ft+=1
        if o=='winner' and L!='best': wrong+=1
        if L=='best': leads+=1
    return fw,named,ft,wrong,leads
rng=random.Random(42)
for rule in ['old','new']:
    for cv in [0.02,0.05,0.10]:
        for reps in [1,2,3]:
            print(rule,cv,reps,run(rule,cv,reps,4000,rng),flush=True)
